// The audit source's receive queue (docs/AUDIT.md "Loss"): between the thread that empties the
// netlink socket and the thread that reassembles and maps records.
//
// Why a queue: a daemon-mode socket that fills makes the kernel's unicast fail, and the kernel
// then drops the record without counting it in `lost` (kauditd_hold_skb on a kernel booted
// without audit=1 — Debian's default). bench/audit_bench.sh found thousands of events lost that
// way at 40,000 events/s. So one thread does nothing but move records out of the socket into this
// queue, fast enough that the socket never fills, and the queue — not the kernel — refuses
// records when the mapping falls too far behind, counting every one it refuses (`audit.lost`,
// source "socket": the socket and this queue behind it are one buffer).
//
// Concurrency: one producer (the reader thread), one consumer (the mapping thread), one mutex
// (its lock/unlock is the release/acquire pairing that publishes a round's bytes to the consumer)
// and one condition variable. Rounds, not records, cross it: a few hundred lock hand-overs a
// second at any rate.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string_view>
#include <vector>

namespace kmes::audit {

// The netlink messages of one receive round, their bytes in one buffer.
class RecordRound {
public:
    struct Message {
        uint16_t type;  // the netlink message type (AUDIT_SYSCALL, AUDIT_GET, …)
        size_t offset;  // its payload in bytes()
        size_t size;
    };
    void add(uint16_t type, std::string_view payload);
    bool empty() const { return messages_.empty(); }
    const std::vector<Message>& messages() const { return messages_; }
    std::string_view payload(const Message& m) const { return {bytes_.data() + m.offset, m.size}; }
    size_t bytes() const { return bytes_.size(); }
    // Audit records in the round (messages the mapping reads as records, not control replies).
    size_t records() const { return records_; }

private:
    std::vector<char> bytes_;
    std::vector<Message> messages_;
    size_t records_ = 0;
};

// Whether a netlink message from the audit socket is an audit record (else a control reply or
// an acknowledgement). AUDIT_USER (1005) is the old user message type `auditctl -m` still sends.
bool is_audit_record(uint16_t type);

class RecordQueue {
public:
    explicit RecordQueue(size_t limit_bytes) : limit_bytes_(limit_bytes) {}

    // Producer. A round that would take the queue past its limit is refused whole and its
    // records counted (dropped()); control replies in it are still queued. An empty queue
    // always takes a round, however large: the limit bounds waiting, not a single round.
    void push(RecordRound round);
    // Producer: no more rounds (the consumer drains what is queued, then pop() says so).
    void close();

    // Consumer: the rounds queued, oldest first, waiting up to `timeout` for the first.
    // Returns false once the queue is closed and empty.
    bool pop(std::vector<RecordRound>& out, std::chrono::milliseconds timeout);
    // Consumer: records refused since the last call.
    uint64_t take_dropped();

private:
    const size_t limit_bytes_;
    std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<RecordRound> rounds_;  // guarded by mutex_
    size_t queued_bytes_ = 0;         // guarded by mutex_
    uint64_t dropped_ = 0;            // guarded by mutex_
    bool closed_ = false;             // guarded by mutex_
};

}  // namespace kmes::audit
