// libkmes C API: the syscalls of PSD-003 §4.1 carried over the shim socket (DESIGN.md §2).
#include <cerrno>
#include <cstring>
#include <mutex>
#include <sched.h>
#include <sys/uio.h>
#include <unistd.h>

#include <vector>

#include "kmes/kmes.h"
#include "ring_mapping.hpp"
#include "socket_io.hpp"
#include "wire.hpp"

using namespace kmes;

namespace {

using wire::kEntryFault;

// The process's emit connection. A C API standing in for syscalls has no handle to carry
// it, so it is process-wide state; the pid check makes a forked child open its own (the
// rate limit is per process, §4.1.2).
struct EmitConnection {
    std::mutex mutex;
    int fd = -1;
    pid_t owner = 0;
};
EmitConnection& emit_connection() {
    static EmitConnection c;
    return c;
}

int set_errno(int code) {
    errno = code;
    return -1;
}

// One request/reply exchange on a fresh or given connection.
int exchange(int fd, std::span<const uint8_t> message, wire::Reply& reply, std::vector<int>* fds = nullptr) {
    if (detail::send_message(fd, message) != 0) return -1;
    if (detail::recv_reply(fd, reply, fds, wire::kMapFdCount) != 0) return -1;
    return 0;
}

wire::RequestHeader header_for(wire::Op op, uint32_t cpu, uint32_t count, uint64_t total) {
    return wire::RequestHeader{wire::kMagic, static_cast<uint32_t>(op), cpu, count, total};
}

template <class T>
void append(std::vector<uint8_t>& out, const T& value) {
    const auto* p = reinterpret_cast<const uint8_t*>(&value);
    out.insert(out.end(), p, p + sizeof value);
}

// Copy `len` bytes from a caller pointer, detecting an inaccessible range the way a kernel
// copy_from_user would (EFAULT) instead of crashing the caller: process_vm_readv on our own
// pid fails cleanly on a bad address.
bool copy_from_caller(uint8_t* dst, const void* src, size_t len) {
    if (len == 0) return true;
    if (src == nullptr) return false;
    iovec local{dst, len};
    iovec remote{const_cast<void*>(src), len};
    ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
    if (n == static_cast<ssize_t>(len)) return true;
    if (n < 0 && (errno == ENOSYS || errno == EPERM)) {  // sandboxed: fall back to a plain copy
        std::memcpy(dst, src, len);
        return true;
    }
    return false;
}

// Build an EMIT / EMIT_BATCH message: header, entry table, then type+payload bytes of each
// entry. From the first entry whose memory is inaccessible on, entries carry kEntryFault and
// no bytes: the shim emits the ones before it and stops there with EFAULT (§4.1.3 step 8).
std::vector<uint8_t> build_emit(wire::Op op, const kmes_emit_entry* entries, uint32_t count, uint32_t cpu) {
    std::vector<uint8_t> table;
    std::vector<uint8_t> body;
    bool faulted = false;
    for (uint32_t i = 0; i < count; ++i) {
        const kmes_emit_entry& e = entries[i];
        wire::WireEntry w{e.event_type_len, 0, e.payload_len};
        if (!faulted) {
            const size_t at = body.size();
            body.resize(at + size_t{e.event_type_len} + e.payload_len);
            faulted = !copy_from_caller(body.data() + at, e.event_type, e.event_type_len) ||
                      !copy_from_caller(body.data() + at + e.event_type_len, e.payload, e.payload_len);
            if (faulted) body.resize(at);
        }
        if (faulted) w.reserved = kEntryFault;
        append(table, w);
    }
    std::vector<uint8_t> message;
    const uint64_t total = sizeof(wire::RequestHeader) + table.size() + body.size();
    message.reserve(total);
    append(message, header_for(op, cpu, count, total));
    message.insert(message.end(), table.begin(), table.end());
    message.insert(message.end(), body.begin(), body.end());
    return message;
}

// Send on the process's emit connection, reconnecting once if the shim restarted.
int emit_exchange(std::span<const uint8_t> message, wire::Reply& reply) {
    EmitConnection& c = emit_connection();
    std::lock_guard lock(c.mutex);
    for (int attempt = 0; attempt < 2; ++attempt) {
        if (c.fd < 0 || c.owner != getpid()) {
            if (c.fd >= 0 && c.owner == getpid()) close(c.fd);
            c.fd = detail::connect_seqpacket(detail::shim_socket_path());
            if (c.fd < 0) return -1;
            c.owner = getpid();
        }
        if (exchange(c.fd, message, reply) == 0) return 0;
        const int saved = errno;
        close(c.fd);
        c.fd = -1;
        if (saved != EPIPE && saved != ECONNRESET) return set_errno(saved);
    }
    return -1;
}

uint32_t current_cpu() {
    int cpu = sched_getcpu();
    return cpu < 0 ? 0u : static_cast<uint32_t>(cpu);
}

}  // namespace

extern "C" {

int kmes_attach(uint32_t cpu_id, uint64_t* capacity) {
    if (capacity == nullptr) return set_errno(EFAULT);
    int fd = detail::connect_seqpacket(detail::shim_socket_path());
    if (fd < 0) return -1;
    std::vector<uint8_t> message;
    append(message, header_for(wire::Op::Attach, cpu_id, 0, sizeof(wire::RequestHeader)));
    wire::Reply reply{};
    if (exchange(fd, message, reply) != 0 || reply.error != 0) {
        const int code = reply.error != 0 ? reply.error : errno;
        close(fd);
        return set_errno(code);
    }
    *capacity = reply.capacity;
    return fd;  // the connection is the attachment; closing it ends the attachment
}

void* kmes_map(int fd, uint64_t capacity) {
    std::vector<uint8_t> message;
    append(message, header_for(wire::Op::Map, 0, 0, sizeof(wire::RequestHeader) + sizeof(uint64_t)));
    append(message, capacity);
    wire::Reply reply{};
    std::vector<int> fds;
    if (exchange(fd, message, reply, &fds) != 0) {
        if (errno == ENOTSOCK) errno = EBADF;
        return nullptr;
    }
    auto close_all = [&] {
        for (int f : fds) close(f);
    };
    if (reply.error != 0 || fds.size() != wire::kMapFdCount) {
        close_all();
        errno = reply.error != 0 ? reply.error : EPROTO;
        return nullptr;
    }
    auto base = detail::map_ring_region(fds[wire::kProducerFd], fds[wire::kConsumerFd], fds[wire::kDataFd], capacity,
                                        detail::MapAccess::Consumer);
    close_all();  // the mapping keeps the pages alive
    if (!base) {
        errno = base.error().code;
        return nullptr;
    }
    return *base;
}

int kmes_unmap(void* base, uint64_t capacity) {
    if (base == nullptr) return set_errno(EINVAL);
    return detail::unmap_ring_region(base, capacity);
}

int kmes_emit(const char* type, uint16_t type_len, const void* payload, uint32_t payload_len) {
    kmes_emit_entry entry{type, type_len, payload, payload_len};
    auto message = build_emit(wire::Op::Emit, &entry, 1, current_cpu());
    wire::Reply reply{};
    if (emit_exchange(message, reply) != 0) return -1;
    return reply.error != 0 ? set_errno(reply.error) : 0;
}

int kmes_emit_batch(const kmes_emit_entry* entries, uint32_t count, uint32_t* emitted_out) {
    // The shim decides EPERM, EINVAL(count) and EAGAIN before anything else (§4.1.3 steps
    // 1–3); a count out of range or a missing array travels as an empty table.
    const bool table_ok = count >= 1 && count <= KMES_MAX_BATCH && entries != nullptr && emitted_out != nullptr;
    std::vector<uint8_t> message;
    if (table_ok) {
        message = build_emit(wire::Op::EmitBatch, entries, count, current_cpu());
    } else {
        append(message, header_for(wire::Op::EmitBatch, current_cpu(), count, sizeof(wire::RequestHeader)));
    }
    wire::Reply reply{};
    if (emit_exchange(message, reply) != 0) return -1;
    if (reply.error == 0 && !table_ok) reply.error = EFAULT;  // shim passed steps 1–3
    if (reply.error == EFAULT && emitted_out == nullptr) return set_errno(EFAULT);  // step 4
    const bool before_step4 = reply.error == EPERM || reply.error == EAGAIN ||
                              (reply.error == EINVAL && (count == 0 || count > KMES_MAX_BATCH));
    if (!before_step4 && emitted_out) *emitted_out = reply.emitted;
    return reply.error != 0 ? set_errno(reply.error) : 0;
}

int kmes_boot_id(uint8_t out[16]) {
    if (out == nullptr) return set_errno(EFAULT);
    int fd = detail::connect_seqpacket(detail::shim_socket_path());
    if (fd < 0) return -1;
    std::vector<uint8_t> message;
    append(message, header_for(wire::Op::BootId, 0, 0, sizeof(wire::RequestHeader)));
    wire::Reply reply{};
    const int rc = exchange(fd, message, reply);
    const int saved = errno;
    close(fd);
    if (rc != 0) return set_errno(saved);
    std::memcpy(out, reply.boot_id, 16);
    return 0;
}

}  // extern "C"
