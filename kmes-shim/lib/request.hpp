// One request/reply exchange with the shim in wire.hpp's formats: shared by the C API
// (client.cpp, inside libkmes.so) and attach_ring (attach.cpp, also in the static consumer
// API), so the two never build a request differently.
#pragma once

#include <cerrno>
#include <cstdint>
#include <span>
#include <vector>

#include "socket_io.hpp"
#include "wire.hpp"

namespace kmes::detail {

// The C API's failure convention: errno set, -1 returned.
inline int set_errno(int code) {
    errno = code;
    return -1;
}

// One request/reply exchange on a fresh or given connection.
inline int exchange(int fd, std::span<const uint8_t> message, wire::Reply& reply, std::vector<int>* fds = nullptr) {
    if (send_message(fd, message) != 0) return -1;
    if (recv_reply(fd, reply, fds, wire::kMapFdCount) != 0) return -1;
    return 0;
}

inline wire::RequestHeader header_for(wire::Op op, uint32_t cpu, uint32_t count, uint64_t total) {
    return wire::RequestHeader{wire::kMagic, static_cast<uint32_t>(op), cpu, count, total};
}

template <class T>
void append(std::vector<uint8_t>& out, const T& value) {
    const auto* p = reinterpret_cast<const uint8_t*>(&value);
    out.insert(out.end(), p, p + sizeof value);
}

}  // namespace kmes::detail
