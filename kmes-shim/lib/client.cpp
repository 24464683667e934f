// libkmes C API: the syscalls of PSD-003 §4.1 carried over the shim socket (DESIGN.md §2).
#include <cerrno>
#include <cstring>
#include <mutex>
#include <sched.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "attach.hpp"
#include "base/reserved_types.hpp"
#include "kmes/kmes.h"
#include "request.hpp"
#include "ring_region.hpp"
#include "socket_io.hpp"
#include "wire.hpp"

using namespace kmes;
using namespace kmes::detail;

namespace {

using wire::kEntryFault;

// No event can be larger than the largest MaxEventSize (PSD-003 §6.1: 4 MiB), and the shim
// rejects a larger entry on its declared lengths alone (EINVAL overflow / ENOSPC, §4.1.2
// steps 4–5) before it looks at any bytes. Such an entry, and every later one (never
// processed), travels without bytes: a bogus payload_len must not make the caller copy GiBs.
constexpr uint64_t kLargestEventSize = 4194304;

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

enum class MergedCopy { copied, fault, unsupported };

// process_vm_readv pins the pages of every remote range separately (~1 µs a range on the
// benchmark machine, docs/PERFORMANCE.md), and a batch's 512 ranges usually come from a few
// buffers: one type string, one payload array. So the ranges are merged into address spans
// (sorted; a gap under a page is bridged, which reads no page outside the two ranges' own),
// the spans read with one call into a scratch buffer, and each range copied out of it. Any
// fault is left to the exact range-by-range path below.
MergedCopy copy_merged(uint8_t* dst, const std::vector<iovec>& ranges) {
    constexpr uintptr_t kBridge = 4096;
    std::vector<size_t> order;
    order.reserve(ranges.size());
    for (size_t i = 0; i < ranges.size(); ++i) {
        const auto start = reinterpret_cast<uintptr_t>(ranges[i].iov_base);
        if (ranges[i].iov_len == 0) continue;
        if (start + ranges[i].iov_len < start) return MergedCopy::fault;  // wraps the address space
        order.push_back(i);
    }
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ranges[a].iov_base < ranges[b].iov_base; });
    std::vector<iovec> spans;
    std::vector<size_t> at(ranges.size());  // offset of each range in the scratch buffer
    size_t scratch_len = 0;
    uintptr_t span_start = 0, span_end = 0;
    for (size_t i : order) {
        const auto start = reinterpret_cast<uintptr_t>(ranges[i].iov_base);
        const uintptr_t end = start + ranges[i].iov_len;
        if (spans.empty() || start >= span_end + kBridge) {
            if (!spans.empty()) scratch_len += span_end - span_start;
            spans.push_back(iovec{ranges[i].iov_base, 0});
            span_start = start;
            span_end = end;
        }
        span_end = std::max(span_end, end);
        spans.back().iov_len = span_end - span_start;
        at[i] = scratch_len + (start - span_start);
    }
    if (spans.empty()) return MergedCopy::copied;
    scratch_len += span_end - span_start;
    std::vector<uint8_t> scratch(scratch_len);
    iovec local{scratch.data(), scratch_len};
    const ssize_t n = process_vm_readv(getpid(), &local, 1, spans.data(), spans.size(), 0);
    if (n < 0 && (errno == ENOSYS || errno == EPERM)) return MergedCopy::unsupported;
    if (n != static_cast<ssize_t>(scratch_len)) return MergedCopy::fault;
    for (size_t i = 0; i < ranges.size(); ++i) {
        if (ranges[i].iov_len == 0) continue;
        std::memcpy(dst, scratch.data() + at[i], ranges[i].iov_len);
        dst += ranges[i].iov_len;
    }
    return MergedCopy::copied;
}

// Copy the caller's byte ranges back to back into `dst`, detecting an inaccessible range the
// way a kernel copy_from_user would (EFAULT) instead of crashing the caller: process_vm_readv
// on our own pid fails cleanly on a bad address. Returns how many leading ranges were copied
// whole; the copy stops at the first inaccessible one.
size_t copy_from_caller(uint8_t* dst, const std::vector<iovec>& ranges) {
    switch (copy_merged(dst, ranges)) {
        case MergedCopy::copied:
            return ranges.size();
        case MergedCopy::unsupported: {  // sandboxed: fall back to a plain copy
            size_t whole = 0;
            for (const iovec& r : ranges) {
                if (r.iov_len > 0 && r.iov_base == nullptr) break;
                if (r.iov_len > 0) std::memcpy(dst, r.iov_base, r.iov_len);
                dst += r.iov_len;
                ++whole;
            }
            return whole;
        }
        case MergedCopy::fault:
            break;
    }
    // Something is inaccessible: read range by range to find exactly which.
    for (size_t i = 0; i < ranges.size(); ++i) {
        if (ranges[i].iov_len == 0) continue;
        iovec local{dst, ranges[i].iov_len};
        if (process_vm_readv(getpid(), &local, 1, &ranges[i], 1, 0) != static_cast<ssize_t>(ranges[i].iov_len))
            return i;
        dst += ranges[i].iov_len;
    }
    return ranges.size();
}

// Build an EMIT / EMIT_BATCH message: header, entry table, then type+payload bytes of each
// entry. From the first entry whose memory is inaccessible on, entries carry kEntryFault and
// no bytes: the shim emits the ones before it and stops there with EFAULT (§4.1.3 step 8).
std::vector<uint8_t> build_emit(wire::Op op, const kmes_emit_entry* entries, uint32_t count, uint32_t cpu) {
    // Type and payload of every entry before the first one rejected on its lengths (see above).
    std::vector<iovec> ranges;
    ranges.reserve(2 * size_t{count});
    size_t body_len = 0;
    for (uint32_t i = 0; i < count; ++i) {
        const kmes_emit_entry& e = entries[i];
        const uint64_t declared =
            uint64_t{KMES_BASE_HEADER_SIZE} + KMES_IDENTITY_SIZE + e.event_type_len + e.payload_len;
        if (declared > kLargestEventSize) break;  // rejected on its lengths (see above)
        ranges.push_back(iovec{const_cast<char*>(e.event_type), e.event_type_len});
        ranges.push_back(iovec{const_cast<void*>(e.payload), e.payload_len});
        body_len += size_t{e.event_type_len} + e.payload_len;
    }
    const size_t table_at = sizeof(wire::RequestHeader);
    const size_t body_at = table_at + size_t{count} * sizeof(wire::WireEntry);
    std::vector<uint8_t> message(body_at + body_len);
    // An entry is sent with its bytes only if both its ranges were copied whole.
    const size_t copied = copy_from_caller(message.data() + body_at, ranges) / 2;
    size_t body_used = 0;
    for (uint32_t i = 0; i < count; ++i) {
        const kmes_emit_entry& e = entries[i];
        wire::WireEntry w{e.event_type_len, 0, e.payload_len};
        if (i < copied)
            body_used += size_t{e.event_type_len} + e.payload_len;
        else
            w.reserved = kEntryFault;
        std::memcpy(message.data() + table_at + i * sizeof w, &w, sizeof w);
    }
    message.resize(body_at + body_used);
    const wire::RequestHeader header = header_for(op, cpu, count, message.size());
    std::memcpy(message.data(), &header, sizeof header);
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
    uint64_t live_generation = 0;
    return detail::attach_ring(cpu_id, capacity, &live_generation);
}

void* kmes_map(int fd, uint64_t capacity) {
    std::vector<uint8_t> message;
    append(message, header_for(wire::Op::map, 0, 0, sizeof(wire::RequestHeader) + sizeof(uint64_t)));
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
                                        detail::MapAccess::consumer);
    close_all();  // the mapping keeps the pages alive
    if (!base) {
        errno = base.error().errno_value();
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
    auto message = build_emit(wire::Op::emit, &entry, 1, current_cpu());
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
        message = build_emit(wire::Op::emit_batch, entries, count, current_cpu());
    } else {
        append(message, header_for(wire::Op::emit_batch, current_cpu(), count, sizeof(wire::RequestHeader)));
    }
    wire::Reply reply{};
    if (emit_exchange(message, reply) != 0) return -1;
    if (reply.error == 0 && !table_ok) reply.error = EFAULT;                        // shim passed steps 1–3
    if (reply.error == EFAULT && emitted_out == nullptr) return set_errno(EFAULT);  // step 4
    // An EPERM for entry N (a reserved type, step 13) reports N like any entry's error; the
    // reply does not say which step decided, so the entry's type tells (the same rule).
    const bool entry_eperm = reply.error == EPERM && table_ok && reply.emitted < count &&
                             base::is_reserved_type(std::string_view(entries[reply.emitted].event_type,
                                                                     entries[reply.emitted].event_type_len));
    const bool before_step4 = (reply.error == EPERM && !entry_eperm) || reply.error == EAGAIN ||
                              (reply.error == EINVAL && (count == 0 || count > KMES_MAX_BATCH));
    if (!before_step4 && emitted_out) *emitted_out = reply.emitted;
    return reply.error != 0 ? set_errno(reply.error) : 0;
}

int kmes_boot_id(uint8_t out[16]) {
    if (out == nullptr) return set_errno(EFAULT);
    int fd = detail::connect_seqpacket(detail::shim_socket_path());
    if (fd < 0) return -1;
    std::vector<uint8_t> message;
    append(message, header_for(wire::Op::boot_id, 0, 0, sizeof(wire::RequestHeader)));
    wire::Reply reply{};
    const int rc = exchange(fd, message, reply);
    const int saved = errno;
    close(fd);
    if (rc != 0) return set_errno(saved);
    std::memcpy(out, reply.boot_id, 16);
    return 0;
}

}  // extern "C"
