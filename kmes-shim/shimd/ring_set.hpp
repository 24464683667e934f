// The per-CPU rings of the shim ("KMES inside the kernel", DESIGN.md §2): one slot per CPU
// with its writer lock, its sequence counter (which outlives ring swaps), its drop counter,
// and the current ring. Every write path — socket emits, self-events, built-in generators —
// goes through RingSet::write, so there is exactly one implementation of §3.1.8 / §5.1.8.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "producer_ring.hpp"

namespace kmes::shim {

struct RingStats {
    uint64_t capacity;
    uint64_t generation;
    uint64_t last_sequence;
    uint64_t written;
    uint64_t dropped;  // structural drops (> 50 % of capacity), sequence consumed (§3.1.6)
};

class RingSet {
public:
    static base::Result<std::unique_ptr<RingSet>> create(uint32_t cpu_count, uint64_t capacity, const RingOptions& options);

    uint32_t cpu_count() const { return static_cast<uint32_t>(slots_.size()); }
    uint64_t capacity() const { return capacity_.load(std::memory_order_acquire); }

    // The ring currently live for `cpu` (kept alive by the caller while it is attached).
    std::shared_ptr<ProducerRing> ring(uint32_t cpu);

    // §3.1.8 / §4.1.3 write phase on ring `cpu % cpu_count`: one clock read shared by all
    // events, a sequence per event, events over 50 % of capacity dropped with their sequence
    // consumed, one publish. Returns the number written to the ring.
    uint32_t write(uint32_t cpu, uint8_t origin_class, std::span<const EventInput> events, const Identity& identity);
    // The same with each event's own identity (`identities[i]` for `events[i]`): the audit
    // source's events of one receive round, each about its own subject.
    uint32_t write(uint32_t cpu, uint8_t origin_class, std::span<const EventInput> events,
                   std::span<const Identity> identities);

    // §5.1.9.4 swap of every CPU to `capacity`. All new rings are allocated first; if any
    // allocation fails nothing changes and the error is returned (§7.1.4).
    base::Status resize(uint64_t capacity);

    RingStats stats(uint32_t cpu);

    // Shutdown: retire every ring (generation bump + wake, as after a swap) so consumers
    // notice at once instead of waiting on rings nobody writes any more.
    void retire_all();

private:
    struct Slot {
        std::mutex writer;  // DESIGN.md §2: at most one writer per ring at any instant
        std::shared_ptr<ProducerRing> ring;
        uint64_t sequence = 0;  // last assigned (§1.2: first event gets 1)
        uint64_t written = 0;
        uint64_t dropped = 0;
    };
    RingSet() = default;

    std::vector<std::unique_ptr<Slot>> slots_;
    std::atomic<uint64_t> capacity_{0};
    RingOptions options_;
    std::mutex resize_mutex_;  // one resize at a time
};

}  // namespace kmes::shim
