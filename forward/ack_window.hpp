// The forwarder's window of published, not yet acknowledged records, and the cursor it may
// persist (docs/FORWARD.md "Exactly once"). The reading thread numbers each record it
// publishes (reserve; the number travels in the message's reply subject) and, after a frame's
// records, records the frame's cursor as a checkpoint at the last number; the ack subscription
// (a nats.c thread) marks numbers acknowledged. The persistable cursor is that of the newest
// checkpoint whose records — and every record before them — are acknowledged: a crash then
// replays only records JetStream may already hold, which their Nats-Msg-Id de-duplicates.
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

struct WindowCounters {
    uint64_t published = 0;
    uint64_t acked = 0;
    uint64_t duplicates = 0;  // acks that said JetStream already had the message
    uint64_t pending = 0;     // published, not acknowledged
};

class AckWindow {
public:
    using Clock = std::chrono::steady_clock;

    // Reading thread: the number of the next record (1, 2, …), counted as published.
    uint64_t reserve();
    // The record just reserved was not handed to the client after all: a failure follows.
    void cancel();
    // `cursor` covers every record reserved so far; `newest_event_ns`: the event time of the
    // newest of them (for the status's lag).
    void checkpoint(const std::string& cursor, int64_t newest_event_ns);
    // Reading thread: waits until fewer than `limit` records are unacknowledged, a failure is
    // set, or `until`. False unless there is room.
    bool wait_for_room(uint64_t limit, Clock::time_point until);
    // Waits until every reserved record is acknowledged (no room taken), a failure is set, or
    // `until`.
    bool wait_drained(Clock::time_point until);

    // Ack thread. Numbers this window never reserved, or acknowledged already, change nothing.
    void acked(uint64_t number, bool duplicate);
    // A record was refused, or the whole session failed (e.g. the connection was lost): the
    // session ends; the first reason is kept.
    void failed(const std::string& why);
    // Sets a failure when records are outstanding and no ack came for `timeout`; true if so.
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

    enum class Slot : uint8_t { in_flight, acked };

    mutable std::mutex mutex_;
    std::condition_variable changed_;  // persistable cursor moved, or a failure (the persister)
    std::condition_variable room_;     // an ack arrived while the reader waits, or a failure
    bool reader_waiting_ = false;
    uint64_t next_ = 1;
    uint64_t contiguous_ = 0;                                    // every record up to this number is acknowledged
    std::deque<Slot> slots_;                                     // records contiguous_ + 1 … next_ - 1
    std::deque<std::pair<uint64_t, PersistPoint>> checkpoints_;  // (last record number, point)
    std::optional<PersistPoint> persistable_;
    std::optional<std::string> failure_;
    WindowCounters counters_;
    Clock::time_point last_progress_ = Clock::now();  // the last ack, or when the window filled
};

}  // namespace eventd::forward
