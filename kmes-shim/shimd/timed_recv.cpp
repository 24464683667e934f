#include "timed_recv.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

namespace kmes::shim {

ssize_t recv_within(int fd, void* buffer, size_t length, int flags, int timeout_ms) {
    pollfd waiting{fd, POLLIN, 0};
    int ready;
    do {
        ready = poll(&waiting, 1, timeout_ms);
    } while (ready < 0 && errno == EINTR);
    if (ready < 0) return -1;
    if (ready == 0) {
        errno = ETIMEDOUT;
        return -1;
    }
    return recv(fd, buffer, length, flags | MSG_DONTWAIT);
}

}  // namespace kmes::shim
