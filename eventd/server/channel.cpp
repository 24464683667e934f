#include "eventd/server/channel.hpp"

#include <fcntl.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cerrno>

namespace eventd::server {
namespace {
using Clock = std::chrono::steady_clock;
constexpr size_t kBufferOverhead = 2048;
constexpr int kStreamSendBuffer = 1 << 20;  // SO_SNDBUFFORCE passes wmem_max
}  // namespace

Channel::Channel(int fd) : fd_(fd) {
    // Asio may have left O_NONBLOCK set; SO_SNDTIMEO needs a blocking socket.
    const int flags = fcntl(fd_, F_GETFL);
    if (flags >= 0) fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK);
}

Sent Channel::send_until(const std::vector<uint8_t>& frame, Clock::time_point deadline) {
    size_t done = 0;
    while (done < frame.size()) {
        const auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - Clock::now());
        if (left.count() <= 0) return done ? Sent::torn : Sent::timed_out;
        timeval tv{static_cast<time_t>(left.count() / 1'000'000), static_cast<suseconds_t>(left.count() % 1'000'000)};
        setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        const ssize_t n = ::send(fd_, frame.data() + done, frame.size() - done, MSG_NOSIGNAL);
        if (n >= 0) {
            done += static_cast<size_t>(n);
            continue;
        }
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return done ? Sent::torn : Sent::timed_out;
        return Sent::closed;
    }
    return Sent::ok;
}

Sent Channel::send_now(const std::vector<uint8_t>& frame) {
    if (!fits(frame.size())) return Sent::would_block;
    for (;;) {
        const ssize_t n = ::send(fd_, frame.data(), frame.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n == static_cast<ssize_t>(frame.size())) return Sent::ok;
        if (n >= 0) return Sent::torn;
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return Sent::would_block;
        return Sent::closed;
    }
}

// Both sides of the comparison are the kernel's own accounting (SIOCOUTQ = bytes charged to
// the socket, SO_SNDBUF = its limit), with a margin for per-buffer overhead. An empty buffer
// always takes a frame (one larger than the whole buffer could never be sent otherwise).
bool Channel::fits(size_t bytes) const {
    int queued = 0, limit = 0;
    socklen_t len = sizeof limit;
    if (ioctl(fd_, SIOCOUTQ, &queued) != 0 || getsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &limit, &len) != 0) return true;
    if (queued <= 0) return true;
    return static_cast<size_t>(queued) + bytes + bytes / 4 + kBufferOverhead <= static_cast<size_t>(limit);
}

void Channel::enlarge_send_buffer() {
    const int bytes = kStreamSendBuffer;
    if (setsockopt(fd_, SOL_SOCKET, SO_SNDBUFFORCE, &bytes, sizeof bytes) != 0)
        setsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
}

}  // namespace eventd::server
