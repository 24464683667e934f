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

class RedeliveringSource;  // redelivery.hpp

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
    // Set by a source that may hand the same record over again (redelivery.hpp): the writer
    // stores the record only when that source says it is not stored already, and hands the
    // receipt back once its batch committed or failed. A failed batch then loses nothing of
    // it (the source delivers it again) and records no gap.
    struct Receipt {
        RedeliveringSource* source = nullptr;
        uint64_t id = 0;  // the source's own number for the record
    };
    Receipt receipt;
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
