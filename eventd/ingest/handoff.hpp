// The bounded handoff between drain threads and one shard writer (PSD-008 §2.3.4): many
// producers, one consumer, capacity ≤ MaxBatchSize items. A full channel blocks the drain
// thread (it stops reading its ring — the intended backpressure path); nothing is dropped.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <vector>

#include "store/event_row.hpp"

namespace eventd {

// The sequences an item accounts for on its CPU: one event, or a gap's whole range.
struct Accounting {
    uint16_t cpu_id;
    uint64_t first;
    uint64_t last;
};

struct HandoffItem {
    store::EventRow row;
    // What the row accounts for under row.boot_id; none for daemon-wide synthetic records.
    std::optional<Accounting> accounting;
    // Non-zero: a record the collector received (eventd/collector/collector.hpp). The writer
    // stores it only when it is not stored already, and reports the ticket once the batch
    // committed or failed (WriterHooks::on_collected) — JetStream redelivers it then, so a
    // failed batch loses nothing of it and no gap is recorded.
    uint64_t ticket = 0;
};

class Handoff {
public:
    explicit Handoff(size_t capacity) : capacity_(capacity) {}

    // Append all of `items` in order, blocking while the channel is full. Returns false (and
    // appends nothing more) only once close() was called.
    bool push(std::vector<HandoffItem>& items);
    // Move up to `max` items into `out`; waits up to `timeout` for the first one.
    size_t pop(std::vector<HandoffItem>& out, size_t max, std::chrono::milliseconds timeout);
    bool empty() const;
    size_t size() const;
    void set_capacity(size_t capacity);  // MaxBatchSize changed at runtime
    // Make a waiting pop() return now (the consumer has other work queued elsewhere).
    void kick();
    // No more pushes will succeed; pop() keeps returning what is queued.
    void close();

private:
    mutable std::mutex mutex_;
    std::condition_variable not_full_;
    std::condition_variable not_empty_;
    std::deque<HandoffItem> items_;
    size_t capacity_;
    bool closed_ = false;
    bool kicked_ = false;
};

}  // namespace eventd
