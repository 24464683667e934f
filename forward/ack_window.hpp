// The forwarder's window of published, not yet acknowledged records, and the cursor it may
// persist (docs/FORWARD.md "Exactly once"). The reading thread numbers each record it
// publishes (reserve) and, after a frame's records, records the frame's cursor as a checkpoint
// at the last number; JetStream's ack callbacks (a nats.c thread) mark numbers acknowledged.
// The persistable cursor is that of the newest checkpoint whose records — and every record
// before them — are acknowledged: a crash then replays only records JetStream may already hold,
// which their Nats-Msg-Id de-duplicates.
//
// Every member is guarded by one mutex (callbacks and the reader run concurrently); the
// condition variable wakes the persister when the persistable cursor moves or a failure is set.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
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
    // Reading thread. `token` names the message to its ack (any unique value, e.g. its address);
    // returns the record's number.
    uint64_t reserve(uintptr_t token);
    // The message was not handed to the client after all: forget it (a failure follows).
    void cancel(uintptr_t token);
    // `cursor` covers every record reserved so far; `newest_event_ns`: the event time of the
    // newest of them (for the status's lag).
    void checkpoint(const std::string& cursor, int64_t newest_event_ns);

    // Ack callbacks.
    void acked(uintptr_t token, bool duplicate);
    void failed(uintptr_t token, const std::string& why);

    // The persister: waits until the persistable cursor differs from `have`, a failure is set,
    // or `until`; returns the persistable cursor (nullopt: none yet).
    std::optional<PersistPoint> wait_persistable(const std::optional<PersistPoint>& have,
                                                 std::chrono::steady_clock::time_point until);
    std::optional<PersistPoint> persistable() const;
    // The first failure (an ack error or timeout), if any.
    std::optional<std::string> failure() const;
    WindowCounters counters() const;
    // Ack progress: when the last ack arrived (or the window was last empty).
    std::chrono::steady_clock::time_point last_progress() const;

private:
    void advance_locked();

    mutable std::mutex mutex_;
    std::condition_variable changed_;
    uint64_t next_ = 1;
    uint64_t contiguous_ = 0;        // every record up to this number is acknowledged
    std::set<uint64_t> acked_above_;  // acknowledged numbers above contiguous_
    std::map<uintptr_t, uint64_t> in_flight_;
    std::deque<std::pair<uint64_t, PersistPoint>> checkpoints_;  // (last record number, point)
    std::optional<PersistPoint> persistable_;
    std::optional<std::string> failure_;
    WindowCounters counters_;
    std::chrono::steady_clock::time_point last_progress_ = std::chrono::steady_clock::now();
};

}  // namespace eventd::forward
