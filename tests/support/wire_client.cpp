#include "support/wire_client.hpp"

#include "eventctl/json_record.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <catch2/catch.hpp>

namespace eventd::query_it {

using Clock = std::chrono::steady_clock;

WireClient::WireClient(const std::string& socket_path, int receive_buffer) {
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    if (receive_buffer > 0) setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    REQUIRE(socket_path.size() < sizeof addr.sun_path);
    std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
    INFO("connect " << socket_path << ": " << std::strerror(errno));
    REQUIRE(connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
}

WireClient::~WireClient() {
    if (fd_ >= 0) close(fd_);
}

std::vector<uint8_t> WireClient::length_prefix(uint32_t length) {
    return {uint8_t(length), uint8_t(length >> 8), uint8_t(length >> 16), uint8_t(length >> 24)};
}

std::vector<uint8_t> WireClient::frame(const std::vector<uint8_t>& body) {
    std::vector<uint8_t> out = length_prefix(uint32_t(body.size()));
    out.insert(out.end(), body.begin(), body.end());
    return out;
}

bool WireClient::send_bytes(const std::vector<uint8_t>& bytes) {
    size_t sent = 0;
    while (sent < bytes.size()) {
        const ssize_t n = send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        sent += size_t(n);
    }
    return true;
}

bool WireClient::send_frame(const nlohmann::json& body) { return send_bytes(frame(nlohmann::json::to_msgpack(body))); }

bool WireClient::fill(size_t want, Clock::time_point deadline) {
    while (buffer_.size() < want) {
        if (closed_) return false;
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0) return false;
        pollfd p{fd_, POLLIN, 0};
        if (poll(&p, 1, int(left)) <= 0) continue;
        uint8_t chunk[65536];
        const ssize_t n = recv(fd_, chunk, sizeof chunk, 0);
        if (n > 0)
            buffer_.insert(buffer_.end(), chunk, chunk + n);
        else if (n == 0 || (errno != EINTR && errno != EAGAIN))
            closed_ = true;
    }
    return true;
}

std::optional<nlohmann::json> WireClient::read_frame(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    if (!fill(4, deadline)) return std::nullopt;
    const uint32_t length =
        uint32_t(buffer_[0]) | uint32_t(buffer_[1]) << 8 | uint32_t(buffer_[2]) << 16 | uint32_t(buffer_[3]) << 24;
    if (!fill(4 + size_t(length), deadline)) return std::nullopt;
    std::vector<uint8_t> body(buffer_.begin() + 4, buffer_.begin() + 4 + length);
    buffer_.erase(buffer_.begin(), buffer_.begin() + 4 + length);
    try {
        return nlohmann::json::from_msgpack(body);
    } catch (...) {}
    // A record may hold a map whose keys are not strings, which nlohmann refuses: read the
    // frame as eventctl's JSON output writes it (such keys as strings).
    std::string text;
    if (!eventctl::append_json_record(text, body).ok()) return std::nullopt;
    try {
        return nlohmann::json::parse(text);
    } catch (...) {
        return std::nullopt;
    }
}

std::vector<nlohmann::json> WireClient::read_reply(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    std::vector<nlohmann::json> frames;
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0) return frames;
        auto f = read_frame(left);
        if (!f) return frames;
        frames.push_back(*f);
        const std::string status = f->value("status", "");
        if (status == "end" || status == "watch" || status == "error") return frames;
    }
}

bool is_watch(const nlohmann::json& frame) {
    return frame.is_object() && frame.size() == 2 && frame.value("status", "") == "watch" &&
           frame.contains("cursor") && frame["cursor"].is_string();
}

bool WireClient::wait_closed(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (!closed_) {
        buffer_.clear();
        if (!fill(1, deadline) && !closed_) return false;
    }
    return true;
}

std::vector<nlohmann::json> records_of(const std::vector<nlohmann::json>& frames) {
    std::vector<nlohmann::json> records;
    for (const auto& f : frames)
        if (f.value("status", "") == "ok" && f.contains("records"))
            for (const auto& r : f["records"]) records.push_back(r);
    return records;
}

}  // namespace eventd::query_it
