// The forwarder's window of published, not yet acknowledged messages, and the cursor it may
// persist (docs/FORWARD.md "Exactly once"). The reading thread numbers each message it
// publishes (reserve, with how many records it packs; the number travels in the message's reply
// subject) and records a frame's cursor as a checkpoint at the last number once every record
// before that cursor is in a published message (packer.hpp); the ack subscription (a nats.c
// thread) marks numbers acknowledged. The persistable cursor is that of the newest checkpoint
// whose messages — and every message before them — are acknowledged: a crash then replays only
// records JetStream may already hold, which their Nats-Msg-Id and the collector's per-record
// check de-duplicate.
//
// Every member is guarded by one mutex (the ack thread and the reader run concurrently); the
// condition variable wakes the persister when the persistable cursor moves or a failure is
// set, and the reader when the window has room again or is drained.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>

namespace eventd::forward {

// A cursor that may be persisted, with the event time of the newest record it covers.
struct PersistPoint {
    std::string cursor;
    int64_t newest_event_ns = 0;
    bool operator==(const PersistPoint&) const = default;
};

// In records (what an operator counts), except `messages` and `pending_messages`.
struct WindowCounters {
    uint64_t published = 0;
    uint64_t acked = 0;
    uint64_t duplicates = 0;  // records of messages JetStream said it already had
    uint64_t pending = 0;     // published, not acknowledged
    uint64_t messages = 0;    // messages published (each packs one or more records)
    uint64_t pending_messages = 0;  // what MaxPendingAcks limits
};

class AckWindow {
public:
    using Clock = std::chrono::steady_clock;

    // Reading thread: the number of the next message (1, 2, …), counted as published with the
    // `records` it packs.
    uint64_t reserve(uint32_t records = 1);
    // The message just reserved was not handed to the client after all: a failure follows.
    void cancel();
    // `cursor` covers every message reserved so far; `newest_event_ns`: the event time of the
    // newest record (for the status's lag).
    void checkpoint(const std::string& cursor, int64_t newest_event_ns);
    // Reading thread: waits until fewer than `limit` messages are unacknowledged, a failure is
    // set, or `until`. False unless there is room.
    bool wait_for_room(uint64_t limit, Clock::time_point until);
    // Waits until every reserved message is acknowledged (no room taken), a failure is set, or
    // `until`.
    bool wait_drained(Clock::time_point until);

    // Ack thread. Numbers this window never reserved, or acknowledged already, change nothing.
    void acked(uint64_t number, bool duplicate);
    // A message was refused, or the whole session failed (e.g. the connection was lost): the
    // session ends; the first reason is kept.
    void failed(const std::string& why);
    // Sets a failure when messages are outstanding and no ack came for `timeout`; true if so.
    bool fail_if_stalled(std::chrono::milliseconds timeout);

    // The persister: waits until the persistable cursor differs from `have`, a failure is set,
    // or `until`; returns the persistable cursor (nullopt: none yet).
    std::optional<PersistPoint> wait_persistable(const std::optional<PersistPoint>& have, Clock::time_point until);
    std::optional<PersistPoint> persistable() const;
    // The first failure (an ack error or timeout), if any.
    std::optional<std::string> failure() const;
    WindowCounters counters() const;

private:
    void advance_locked();  // the contiguous mark, then the persistable cursor
    void fail_locked(const std::string& why);

    struct Slot {
        uint32_t records;
        bool acked;
    };

    mutable std::mutex mutex_;
    std::condition_variable changed_;  // persistable cursor moved, or a failure (the persister)
    std::condition_variable room_;     // an ack arrived while the reader waits, or a failure
    bool reader_waiting_ = false;
    uint64_t next_ = 1;
    uint64_t contiguous_ = 0;                                    // every message up to this number is acknowledged
    std::deque<Slot> slots_;                                     // messages contiguous_ + 1 … next_ - 1
    std::deque<std::pair<uint64_t, PersistPoint>> checkpoints_;  // (last message number, point)
    std::optional<PersistPoint> persistable_;
    std::optional<std::string> failure_;
    WindowCounters counters_;
    Clock::time_point last_progress_ = Clock::now();  // the last ack, or when the window filled
};

}  // namespace eventd::forward
