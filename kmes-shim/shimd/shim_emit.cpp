// Syscall emission (PSD-003 §4.1.2 kmes_emit, §4.1.3 kmes_emit_batch) received over the shim
// socket: the checks in the spec's order, then one write phase through RingSet::write.
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "base/reserved_types.hpp"
#include "shim.hpp"
#include "timed_recv.hpp"
#include "validation.hpp"

namespace kmes::shim {
namespace {

// Pulls the rest of a multi-packet message off the connection on demand (wire.hpp). Each packet
// must come within `timeout_ms` (issue 40: a request's first packet and never the rest must not
// hold the connection's thread); one that does not ends the connection — its reading side is
// shut down, so the serve loop's next recv sees the end.
class MessageBody {
public:
    MessageBody(int fd, std::vector<uint8_t>& message, uint64_t total, int timeout_ms)
        : fd_(fd), message_(message), received_(message.size()), total_(total), timeout_ms_(timeout_ms) {}

    // Make sure the first `bytes` of the message are in memory. False if the message is shorter.
    bool ensure(uint64_t bytes) {
        while (message_.size() < bytes && received_ < total_) {
            const size_t at = message_.size();
            message_.resize(at + wire::kMaxPacket);
            const ssize_t n = recv_within(fd_, message_.data() + at, wire::kMaxPacket, 0, timeout_ms_);
            message_.resize(at + (n > 0 ? size_t(n) : 0));
            if (n <= 0) return end();
            received_ += uint64_t(n);
        }
        return message_.size() >= bytes;
    }
    // Read and drop whatever of the message is still in the socket, so the next request
    // starts on a message boundary.
    void discard_rest() {
        uint8_t scratch[4096];
        while (received_ < total_) {
            const ssize_t n = recv_within(fd_, scratch, sizeof scratch, MSG_TRUNC, timeout_ms_);
            if (n <= 0) {
                end();
                return;
            }
            received_ += uint64_t(n);
        }
    }

private:
    bool end() {
        shutdown(fd_, SHUT_RD);
        received_ = total_;  // nothing more is read
        return false;
    }

    int fd_;
    std::vector<uint8_t>& message_;
    uint64_t received_;
    uint64_t total_;
    int timeout_ms_;
};

}  // namespace

wire::Reply Shim::emit(int fd, const PeerCredentials& peer, const Identity& identity, const wire::RequestHeader& header,
                       std::vector<uint8_t>& message) {
    const bool single = static_cast<wire::Op>(header.op) == wire::Op::emit;
    MessageBody body(fd, message, header.total_len, static_cast<int>(request_timeout_ms_.load(std::memory_order_relaxed)));
    wire::Reply reply{};
    auto fail = [&](int code) {
        body.discard_rest();
        reply.error = code;
        return reply;
    };

    // Step 1: SeAuditPrivilege = root or a member of EmitGroup (DESIGN.md §2).
    if (!may_emit(peer)) return fail(EPERM);
    // §4.1.3 step 2: 1 ≤ count ≤ 256 (a single emit is always one entry).
    const uint32_t count = header.count;
    if (single ? count != 1 : (count < 1 || count > KMES_MAX_BATCH)) return fail(EINVAL);
    // §4.1.2 step 2 / §4.1.3 step 3: reserve `count` tokens atomically; SeTcbPrivilege
    // (root) is exempt. Unused tokens are refunded below: only emitted events are charged.
    const RateLimiter::ProcessKey process{peer.pid, peer.start_time};
    const bool limited = !peer.is_root();
    if (limited && !limiter_.reserve(process, count)) return fail(EAGAIN);

    // §4.1.3 step 5: the descriptor array (absent when the caller passed an inaccessible one).
    const uint64_t table_end = sizeof(wire::RequestHeader) + uint64_t{count} * sizeof(wire::WireEntry);
    if (!body.ensure(table_end)) {
        if (limited) limiter_.refund(process, count);
        return fail(EFAULT);
    }
    std::vector<wire::WireEntry> table(count);
    std::memcpy(table.data(), message.data() + sizeof(wire::RequestHeader), count * sizeof(wire::WireEntry));

    const uint64_t max_event = max_event_size_.load(std::memory_order_relaxed);
    const uint64_t structural = rings_->capacity() / 2;
    const uint32_t depth = max_nesting_depth_.load(std::memory_order_relaxed);
    struct Accepted {
        uint64_t offset;
        uint16_t type_len;
        uint32_t payload_len;
    };
    std::vector<Accepted> accepted;
    accepted.reserve(count);
    int failure = 0;
    uint64_t offset = table_end;
    for (const wire::WireEntry& entry : table) {
        // §4.1.2 step 3 (single emit: type length is checked before the sizes).
        if (single && entry.type_len == 0) {
            failure = EINVAL;
            break;
        }
        // Step 4 / §4.1.3 step 6: declared size from the lengths only. Ours includes the
        // 48 bytes of identity stamps: it is the size the event occupies in the ring.
        const uint64_t size = uint64_t{KMES_BASE_HEADER_SIZE} + KMES_IDENTITY_SIZE + entry.type_len + entry.payload_len;
        if (size > UINT32_MAX) {
            failure = EINVAL;
            break;
        }
        // Steps 5–6 / §4.1.3 step 7: MaxEventSize, then 50 % of the ring capacity.
        if (size > max_event || size > structural) {
            failure = ENOSPC;
            break;
        }
        // Step 7 / §4.1.3 step 8: the caller's memory was inaccessible.
        if (entry.reserved & wire::kEntryFault) {
            failure = EFAULT;
            break;
        }
        const uint64_t end = offset + entry.type_len + entry.payload_len;
        if (!body.ensure(end)) {
            failure = EFAULT;
            break;
        }
        // Steps 7–8 / §4.1.3 step 9 on the shim's own copy (anti-TOCTOU by construction).
        const std::string_view type(reinterpret_cast<const char*>(message.data() + offset), entry.type_len);
        const std::span<const uint8_t> payload(message.data() + offset + entry.type_len, entry.payload_len);
        if (entry.type_len == 0 || !valid_utf8(type) || !valid_msgpack(payload, depth)) {
            failure = EINVAL;
            break;
        }
        // Step 13 (ours, issue 39; ABI.md "Reserved namespaces"): synthetic.*, audit.*, kmes.*,
        // bpf.* and alert.* are written by the product's own sources only — an emitter's
        // request for one, root's included, would let it forge kernel or eventd records.
        if (base::is_reserved_type(type) && !test_allow_reserved_types_) {
            failure = EPERM;
            break;
        }
        accepted.push_back(Accepted{offset, entry.type_len, entry.payload_len});
        offset = end;
    }
    body.discard_rest();

    // Views into `message` are made only now: body.ensure() may have moved its bytes.
    std::vector<EventInput> events;
    events.reserve(accepted.size());
    for (const Accepted& a : accepted) {
        events.push_back(
            EventInput{std::string_view(reinterpret_cast<const char*>(message.data() + a.offset), a.type_len),
                       std::span<const uint8_t>(message.data() + a.offset + a.type_len, a.payload_len)});
    }
    // Write phase: origin class 0, the ring of the CPU the caller ran on (DESIGN.md §2).
    if (!events.empty()) rings_->write(emit_ring(header.cpu), KMES_ORIGIN_USERSPACE, events, identity);
    if (limited) limiter_.refund(process, count - static_cast<uint32_t>(events.size()));
    reply.error = failure;
    reply.emitted = static_cast<uint32_t>(events.size());
    return reply;
}

}  // namespace kmes::shim
