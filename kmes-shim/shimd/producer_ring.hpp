// One CPU's ring as the producer ("the kernel") owns it: three memfds (producer page,
// consumer page, data), the shim's own writable mapping, and the PSD-003 §5.1.8 write
// protocol. Layout drawn in <kmes/kmes.h>.
//
// Threading: exactly one writer at a time (the caller holds the CPU's writer lock,
// DESIGN.md §2); consumers in other processes read concurrently through their own mappings.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "../lib/ring_layout.hpp"
#include "base/result.hpp"
#include "kmes/guid.hpp"

namespace kmes::shim {

// Identity stamps written between type and payload (DESIGN.md §2). All-zero for kernel emitters.
struct Identity {
    Guid effective_token{};
    Guid true_token{};
    Guid process{};
};

// One event to write; type and payload are already validated (or trusted).
struct EventInput {
    std::string_view type;
    std::span<const uint8_t> payload;
};

// Header fields KMES stamps (§2.1.3).
struct Stamp {
    uint64_t timestamp;
    uint64_t sequence;
    uint16_t cpu_id;
    uint8_t origin_class;
};

struct RingOptions {
    bool mlock = false;      // lock and prefault the data pages (seed BH-005)
    bool hugepages = false;  // back the data region with 2 MiB pages when possible
};

// Size of the event as written here: base header + type + identity stamps + payload.
inline uint64_t event_size_of(const EventInput& e) {
    return uint64_t{KMES_BASE_HEADER_SIZE} + e.type.size() + KMES_IDENTITY_SIZE + e.payload.size();
}

class ProducerRing {
public:
    static base::Result<std::unique_ptr<ProducerRing>> create(uint16_t cpu_id, uint64_t capacity, uint64_t generation,
                                                        const RingOptions& options);
    ~ProducerRing();
    ProducerRing(const ProducerRing&) = delete;
    ProducerRing& operator=(const ProducerRing&) = delete;

    uint64_t capacity() const { return view_.capacity; }
    uint16_t cpu_id() const { return cpu_id_; }
    uint64_t generation() const { return view_.generation().load(std::memory_order_acquire); }
    // The generation the ring was created with: its value for as long as it is live. Once
    // retired (§5.1.9.4 step 5) the ring's generation differs from this.
    uint64_t created_generation() const { return created_generation_; }
    const detail::RingView& view() const { return view_; }

    // File descriptions handed to consumers by MAP: read-only for producer page and data.
    int consumer_producer_fd() const { return ro_producer_fd_; }
    int consumer_page_fd() const { return consumer_fd_; }
    int consumer_data_fd() const { return ro_data_fd_; }

    // §5.1.8 steps 6–7 for one event at the private frontier (not yet visible). The caller
    // has checked event_size <= capacity / 2.
    void append(const Stamp& stamp, const EventInput& event, const Identity& identity);
    // §5.1.8 steps 8–9: publish the frontier with one release store, then notify.
    void publish();

    // §5.1.9.4 step 2: copy the newest events of `old` that fit, in sequence order, to
    // position 0 of this (fresh, unpublished) ring. Returns the number of events copied.
    uint64_t adopt_survivors(const ProducerRing& old);
    // §5.1.9.4 steps 5–6, on the old ring after the switch.
    void retire();

    // Counters for tests and `kmes-tail --info`.
    uint64_t futex_wake_calls() const { return futex_wake_calls_.load(std::memory_order_relaxed); }

private:
    ProducerRing() = default;
    void make_room(uint64_t size);
    void notify_if_needed();

    uint16_t cpu_id_ = 0;
    uint64_t created_generation_ = 0;
    detail::RingView view_{};
    uint8_t* base_ = nullptr;
    int producer_fd_ = -1, consumer_fd_ = -1, data_fd_ = -1;
    int ro_producer_fd_ = -1, ro_data_fd_ = -1;
    uint64_t frontier_ = 0;  // running write position of a batch (§5.1.8 "internal frontier")
    uint64_t tail_ = 0;      // producer's copy of tail_pos
    std::atomic<uint64_t> futex_wake_calls_{0};
};

}  // namespace kmes::shim
