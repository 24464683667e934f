#include "protocol/client.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/interrupt.hpp"

namespace protocol {
namespace {

// A reply body's first read: one frame of eventd's (about QueryResponseTargetBytes, 64 KiB).
constexpr std::size_t kFirstBodyChunk = 64 * 1024;

std::string connect_advice(int code) {
    switch (code) {
        case ENOENT:
            return "no such socket; is eventd running, and is this its QuerySocketPath? Pass --socket PATH or set "
                   "EVENTD_SOCKET";
        case ECONNREFUSED:
            return "nothing is listening there; is eventd running? (or pass --socket PATH / set EVENTD_SOCKET)";
        case EACCES:
        case EPERM:
            return "permission denied on the socket or a directory above it";
        case ENOTSOCK:
            return "that path is not a socket; pass eventd's QuerySocketPath with --socket PATH";
        default:
            return std::strerror(code);
    }
}

// Waits until fd is ready for `events` or Ctrl-C arrives; false on Ctrl-C.
bool wait_for(int fd, short events) {
    pollfd fds[2] = {{fd, events, 0}, {base::interrupt_fd(), POLLIN, 0}};
    const nfds_t n = base::interrupt_fd() >= 0 ? 2 : 1;
    while (true) {
        if (base::interrupted()) return false;
        const int r = poll(fds, n, -1);
        if (r < 0 && errno == EINTR) continue;
        if (n == 2 && (fds[1].revents & POLLIN)) return false;
        return true;  // ready, hung up or an error: the read/write that follows reports which
    }
}

}  // namespace

base::Result<Connection> Connection::open(const std::string& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.empty() || path.size() >= sizeof addr.sun_path) {
        return base::Error{ENAMETOOLONG, "cannot connect to eventd at '" + path + "': a socket path must be 1.." +
                                             std::to_string(sizeof addr.sun_path - 1) + " bytes"};
    }
    std::memcpy(addr.sun_path, path.data(), path.size());
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return base::Error{errno, std::string("cannot create a socket: ") + std::strerror(errno)};
    int rc;
    do {
        rc = connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
    } while (rc != 0 && errno == EINTR && !base::interrupted());
    if (rc != 0) {
        const int code = errno;
        close(fd);
        return base::Error{code, "cannot connect to eventd at " + path + ": " + connect_advice(code)};
    }
    return Connection(fd, path);
}

Connection::Connection(Connection&& other) noexcept : fd_(other.fd_), path_(std::move(other.path_)) { other.fd_ = -1; }

Connection::~Connection() {
    if (fd_ >= 0) close(fd_);
}

base::Result<ReadResult> Connection::send_frame(std::span<const uint8_t> body) {
    std::vector<uint8_t> frame(4 + body.size());
    const auto len = static_cast<uint32_t>(body.size());
    for (int i = 0; i < 4; ++i) frame[i] = static_cast<uint8_t>(len >> (8 * i));
    std::memcpy(frame.data() + 4, body.data(), body.size());
    std::size_t done = 0;
    while (done < frame.size()) {
        if (!wait_for(fd_, POLLOUT)) return ReadResult::interrupted;
        // MSG_NOSIGNAL: a closed peer is an error to report, not a SIGPIPE that kills the client.
        const ssize_t n = send(fd_, frame.data() + done, frame.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            done += static_cast<std::size_t>(n);
            continue;
        }
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        return base::Error{errno, "eventd at " + path_ +
                                      " closed the connection while the query was being sent: " + std::strerror(errno)};
    }
    return ReadResult::frame;
}

base::Result<ReadResult> Connection::read_exact(std::span<uint8_t> out, std::size_t before, std::size_t total) {
    std::size_t done = 0;
    while (done < out.size()) {
        if (!wait_for(fd_, POLLIN)) return ReadResult::interrupted;
        const ssize_t n = recv(fd_, out.data() + done, out.size() - done, MSG_DONTWAIT);
        if (n > 0) {
            done += static_cast<std::size_t>(n);
            continue;
        }
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n == 0 && before + done == 0) return ReadResult::closed;
        if (n == 0) {
            return base::Error{EPROTO, "eventd at " + path_ + " closed the connection in the middle of a reply (" +
                                           std::to_string(before + done) + " of " +
                                           std::to_string(total ? total : out.size()) + " bytes)"};
        }
        return base::Error{errno, "reading from eventd at " + path_ + " failed: " + std::strerror(errno)};
    }
    return ReadResult::frame;
}

base::Result<ReadResult> Connection::read_frame(std::vector<uint8_t>& body) {
    uint8_t header[4];
    auto got = read_exact(header);
    if (!got || got.value() != ReadResult::frame) return got;
    const uint32_t len = header[0] | (header[1] << 8) | (header[2] << 16) | (static_cast<uint32_t>(header[3]) << 24);
    if (len > kMaxReplyFrameBytes) {
        return base::Error{EPROTO, "eventd at " + path_ + " announced a reply frame of " + std::to_string(len) +
                                       " bytes, over the client's limit of " + std::to_string(kMaxReplyFrameBytes) +
                                       "; is that really eventd's query socket?"};
    }
    // The length is the peer's word (issue 40 item 1): the body grows with the bytes that came
    // — kFirstBodyChunk, then twice what arrived — so 4 bytes announcing 256 MiB cost no more
    // than the first chunk, not 256 MiB allocated and zeroed before a byte of body.
    body.clear();
    std::size_t received = 0;
    do {
        const std::size_t until = std::min<std::size_t>(len, std::max(kFirstBodyChunk, 2 * received));
        body.resize(until);
        got = read_exact(std::span(body).subspan(received), received, len);
        if (!got || got.value() != ReadResult::frame) break;
        received = until;
    } while (received < len);
    if (got && got.value() == ReadResult::closed) {
        return base::Error{EPROTO, "eventd at " + path_ + " closed the connection in the middle of a reply (0 of " +
                                       std::to_string(len) + " bytes)"};
    }
    return got;
}

}  // namespace protocol
