#include "socket_io.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "kmes/kmes.h"

namespace kmes::detail {

std::string shim_socket_path() {
    const char* env = std::getenv("KMES_SOCKET");
    return env && *env ? env : KMES_DEFAULT_SOCKET;
}

int connect_seqpacket(const std::string& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int send_message(int fd, std::span<const uint8_t> message) {
    size_t offset = 0;
    do {
        const size_t chunk = std::min<size_t>(wire::kMaxPacket, message.size() - offset);
        ssize_t n = send(fd, message.data() + offset, chunk, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        offset += chunk;  // SEQPACKET: a packet goes whole or not at all
    } while (offset < message.size());
    return 0;
}

int send_reply(int fd, const wire::Reply& reply, std::span<const int> fds) {
    iovec iov{const_cast<wire::Reply*>(&reply), sizeof reply};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * wire::kMapFdCount)];
    if (!fds.empty()) {
        msg.msg_control = control;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
        cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
        cmsg->cmsg_level = SOL_SOCKET;
        cmsg->cmsg_type = SCM_RIGHTS;
        cmsg->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
        std::memcpy(CMSG_DATA(cmsg), fds.data(), sizeof(int) * fds.size());
    }
    while (sendmsg(fd, &msg, MSG_NOSIGNAL) < 0) {
        if (errno != EINTR) return -1;
    }
    return 0;
}

int recv_reply(int fd, wire::Reply& reply, std::vector<int>* fds, size_t max_fds) {
    iovec iov{&reply, sizeof reply};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * wire::kMapFdCount)];
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t n;
    while ((n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC)) < 0) {
        if (errno != EINTR) return -1;
    }
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        const int* received = reinterpret_cast<const int*>(CMSG_DATA(c));
        for (size_t i = 0; i < count; ++i) {
            if (fds && fds->size() < max_fds)
                fds->push_back(received[i]);
            else
                close(received[i]);
        }
    }
    if (n == 0) {
        errno = ECONNRESET;
        return -1;
    }
    if (static_cast<size_t>(n) != sizeof reply) {
        errno = EPROTO;
        return -1;
    }
    return 0;
}

}  // namespace kmes::detail
