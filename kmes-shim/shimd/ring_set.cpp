#include "ring_set.hpp"

#include <ctime>

#include "base/sync_point.hpp"

namespace kmes::shim {
namespace {
uint64_t realtime_ns() {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
}
}  // namespace

base::Result<std::unique_ptr<RingSet>> RingSet::create(uint32_t cpu_count, uint64_t capacity, const RingOptions& options) {
    std::unique_ptr<RingSet> set(new RingSet());
    set->options_ = options;
    set->capacity_.store(capacity, std::memory_order_release);
    for (uint32_t cpu = 0; cpu < cpu_count; ++cpu) {
        auto ring = ProducerRing::create(static_cast<uint16_t>(cpu), capacity, 1, options);
        if (!ring) return ring.error();
        auto slot = std::make_unique<Slot>();
        slot->ring = std::move(*ring);
        set->slots_.push_back(std::move(slot));
    }
    return set;
}

std::shared_ptr<ProducerRing> RingSet::ring(uint32_t cpu) {
    Slot& slot = *slots_.at(cpu);
    std::lock_guard lock(slot.writer);
    return slot.ring;
}

uint32_t RingSet::write(uint32_t cpu, uint8_t origin_class, std::span<const EventInput> events,
                        const Identity& identity) {
    return write(cpu, origin_class, events, std::span<const Identity>(&identity, 1));
}

uint32_t RingSet::write(uint32_t cpu, uint8_t origin_class, std::span<const EventInput> events,
                        std::span<const Identity> identities) {
    Slot& slot = *slots_[cpu % slots_.size()];
    const uint16_t cpu_id = static_cast<uint16_t>(cpu % slots_.size());
    // The lock is the Linux stand-in for "preemption disabled" (§3.1.3): held only for the
    // write phase — clock, sequences, ring writes, publish, notification.
    std::lock_guard lock(slot.writer);
    ProducerRing& ring = *slot.ring;
    const uint64_t limit = ring.capacity() / 2;
    const uint64_t timestamp = realtime_ns();  // §3.1.8 step 2: one clock read per batch
    uint32_t written = 0;
    for (size_t i = 0; i < events.size(); ++i) {
        const EventInput& event = events[i];
        const uint64_t sequence = ++slot.sequence;                 // consumed even if the event is dropped
        if (event.type.empty() || event_size_of(event) > limit) {  // §3.1.6 structural checks
            ++slot.dropped;
            continue;
        }
        const Identity& identity = identities.size() == 1 ? identities[0] : identities[i];
        ring.append(Stamp{timestamp, sequence, cpu_id, origin_class}, event, identity);
        ++written;
    }
    KMES_SYNC_POINT("RingSet::write:before_publish");
    ring.publish();
    slot.written += written;
    return written;
}

base::Status RingSet::resize(uint64_t capacity) {
    std::lock_guard resize_lock(resize_mutex_);
    if (capacity == capacity_.load(std::memory_order_acquire)) return {};
    // Allocate every new ring before touching any CPU, so a failure changes nothing (§7.1.4).
    std::vector<std::shared_ptr<ProducerRing>> fresh;
    for (uint32_t cpu = 0; cpu < slots_.size(); ++cpu) {
        const uint64_t generation = ring(cpu)->generation() + 1;
        auto created = ProducerRing::create(static_cast<uint16_t>(cpu), capacity, generation, options_);
        if (!created) return created.error();
        fresh.push_back(std::move(*created));
    }
    for (uint32_t cpu = 0; cpu < slots_.size(); ++cpu) {
        Slot& slot = *slots_[cpu];
        std::lock_guard lock(slot.writer);  // §5.1.9.4 step 1: nothing emitted on this CPU meanwhile
        std::shared_ptr<ProducerRing> old = slot.ring;
        fresh[cpu]->adopt_survivors(*old);  // step 2 (step 3: generation set at create)
        slot.ring = fresh[cpu];             // step 4: writers now use the new ring
        KMES_SYNC_POINT("RingSet::resize:after_switch");
        old->retire();  // steps 5–6
    }
    capacity_.store(capacity, std::memory_order_release);
    return {};
}

void RingSet::retire_all() {
    for (auto& slot : slots_) {
        std::lock_guard lock(slot->writer);
        slot->ring->retire();
    }
}

RingStats RingSet::stats(uint32_t cpu) {
    Slot& slot = *slots_.at(cpu);
    std::lock_guard lock(slot.writer);
    return RingStats{slot.ring->capacity(), slot.ring->generation(), slot.sequence, slot.written, slot.dropped};
}

}  // namespace kmes::shim
