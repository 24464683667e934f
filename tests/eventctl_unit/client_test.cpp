// protocol::Connection reading reply frames (protocol/client.hpp, PSD-008 §8.8) from a peer on a
// real Unix socket. Whatever listens on the socket writes the length header, so the length is
// not believed before its bytes come (issue 40 item 1).
#include <catch2/catch.hpp>

#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "protocol/client.hpp"
#include "msgpack_bytes.hpp"

namespace eventctl::test {
namespace {

// A listening Unix socket in a directory of its own, a client Connection to it, and the
// accepted end for the test to write what "eventd" sends.
struct SocketPair {
    std::string dir;
    std::string path;
    int listener = -1;
    int peer = -1;

    SocketPair() {
        char templ[] = "/tmp/eventctl-client-test-XXXXXX";
        REQUIRE(mkdtemp(templ) != nullptr);
        dir = templ;
        path = dir + "/query.sock";
        listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        REQUIRE(listener >= 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
        REQUIRE(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
        REQUIRE(listen(listener, 1) == 0);
    }
    ~SocketPair() {
        if (peer >= 0) close(peer);
        if (listener >= 0) close(listener);
        std::filesystem::remove_all(dir);
    }
    protocol::Connection connect() {
        auto conn = protocol::Connection::open(path);
        REQUIRE(conn.ok());
        peer = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
        REQUIRE(peer >= 0);
        return std::move(*conn);
    }
};

Bytes header(uint32_t length) {
    return {uint8_t(length), uint8_t(length >> 8), uint8_t(length >> 16), uint8_t(length >> 24)};
}

// Writes `bytes` to `fd` from another thread (more than a socket buffer holds) and closes it.
std::thread send_and_close(int& fd, Bytes bytes) {
    const int out = fd;
    fd = -1;
    return std::thread([out, bytes = std::move(bytes)] {
        size_t done = 0;
        while (done < bytes.size()) {
            const ssize_t n = write(out, bytes.data() + done, bytes.size() - done);
            if (n <= 0) break;
            done += static_cast<size_t>(n);
        }
        close(out);
    });
}

}  // namespace

TEST_CASE("a reply frame announcing 256 MiB in a few bytes is an error, and its length is never allocated",
          "[client]") {
    SocketPair s;
    protocol::Connection conn = s.connect();
    // The client's limit exactly, then 100 bytes of body and the end: before issue 40 the body
    // was resized to the announced 256 MiB (and zeroed) before the first byte was read.
    std::thread writer = send_and_close(s.peer, cat({header(protocol::kMaxReplyFrameBytes), Bytes(100, 0x80)}));
    std::vector<uint8_t> body;
    const auto got = conn.read_frame(body);
    writer.join();
    REQUIRE_FALSE(got.ok());
    CHECK(got.error().message.find("closed the connection in the middle of a reply (100 of 268435456 bytes)") !=
          std::string::npos);
    CHECK(body.capacity() <= 1024 * 1024);
}

TEST_CASE("a reply frame longer than the first read arrives whole, byte for byte", "[client]") {
    SocketPair s;
    protocol::Connection conn = s.connect();
    // A frame of 1 MiB + 3: the body grows through several reads (64 KiB, then doubling).
    Bytes frame_body(1024 * 1024 + 3);
    for (size_t i = 0; i < frame_body.size(); ++i) frame_body[i] = uint8_t(i * 7 + i / 251);
    const Bytes empty_frame = header(0);
    std::thread writer = send_and_close(s.peer, cat({header(uint32_t(frame_body.size())), frame_body, empty_frame}));
    std::vector<uint8_t> body;
    auto got = conn.read_frame(body);
    REQUIRE(got.ok());
    CHECK(*got == protocol::ReadResult::frame);
    CHECK(body == frame_body);
    got = conn.read_frame(body);  // an empty body is a frame too
    REQUIRE(got.ok());
    CHECK(*got == protocol::ReadResult::frame);
    CHECK(body.empty());
    got = conn.read_frame(body);  // then the end, at a frame boundary
    writer.join();
    REQUIRE(got.ok());
    CHECK(*got == protocol::ReadResult::closed);
}

TEST_CASE("a reply cut short after its first read says how much of it came", "[client]") {
    SocketPair s;
    protocol::Connection conn = s.connect();
    // 200 KiB announced, 150 KiB sent: cut in the body's second read.
    std::thread writer = send_and_close(s.peer, cat({header(200 * 1024), Bytes(150 * 1024, 0x01)}));
    std::vector<uint8_t> body;
    const auto got = conn.read_frame(body);
    writer.join();
    REQUIRE_FALSE(got.ok());
    CHECK(got.error().message.find("in the middle of a reply (153600 of 204800 bytes)") != std::string::npos);
}

}  // namespace eventctl::test
