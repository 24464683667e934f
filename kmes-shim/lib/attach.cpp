// attach_ring: the ATTACH request (PSD-003 §4.1.1) with what kmes_attach does not return —
// the ring's live generation and the shim's boot id. Outside client.cpp because the C++
// consumer API (ring_mapping.cpp, a static library) calls it too: libkmes.so exports only the
// C ABI.
#include "attach.hpp"

#include <unistd.h>

#include <cstring>
#include <vector>

#include "request.hpp"
#include "socket_io.hpp"
#include "wire.hpp"

namespace kmes::detail {
int attach_ring(uint32_t cpu_id, uint64_t* capacity, uint64_t* live_generation, uint8_t* boot_id) {
    if (capacity == nullptr) return set_errno(EFAULT);
    int fd = connect_seqpacket(shim_socket_path());
    if (fd < 0) return -1;
    std::vector<uint8_t> message;
    append(message, header_for(wire::Op::attach, cpu_id, 0, sizeof(wire::RequestHeader)));
    wire::Reply reply{};
    if (exchange(fd, message, reply) != 0 || reply.error != 0) {
        const int code = reply.error != 0 ? reply.error : errno;
        close(fd);
        return set_errno(code);
    }
    *capacity = reply.capacity;
    if (live_generation) *live_generation = reply.generation;
    if (boot_id) std::memcpy(boot_id, reply.boot_id, 16);
    return fd;  // the connection is the attachment; closing it ends the attachment
}
}  // namespace kmes::detail
