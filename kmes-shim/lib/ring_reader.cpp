#include "kmes/ring_reader.hpp"

#include <cerrno>
#include <immintrin.h>
#include <unistd.h>

#include <algorithm>

#include "attach.hpp"
#include "futex.hpp"
#include "kmes/kmes.h"
#include "base/sync_point.hpp"
#include "ring_layout.hpp"
#include "ring_region.hpp"

namespace kmes {
namespace {
detail::RingView view(const RingMapping& m) { return detail::view_of(m.base(), m.capacity()); }

// The generation a mapping's ring has while it is live (§5.1.9.3 compares against it). Known
// exactly when the shim reported it at attach. Read from the ring otherwise — which is wrong
// if a swap retired the ring in between: the retired ring's bumped generation equals its
// successor's (§5.1.9.4 steps 3 and 5), so the reader would never see it change.
uint64_t live_generation_of(const RingMapping& m) {
    return m.live_generation() != 0 ? m.live_generation() : view(m).generation().load(std::memory_order_acquire);
}
}  // namespace

// ---- RingReader ----------------------------------------------------------------------------

base::Result<RingReader> RingReader::open(uint32_t cpu, ReaderOptions options) {
    auto mapping = RingMapping::attach(cpu);
    if (!mapping) return mapping.error();
    return RingReader(cpu, std::move(*mapping), std::move(options));
}

RingReader::RingReader(uint32_t cpu, RingMapping mapping, ReaderOptions options)
    : cpu_(cpu), mapping_(std::move(mapping)), options_(std::move(options)) {
    if (!options_.reattach) options_.reattach = [](uint32_t c) { return RingMapping::attach(c); };
    copy_.resize(4096);
    generation_ = live_generation_of(mapping_);
    // §5.1.9: a first attach SHOULD start at tail_pos.
    read_pos_ = view(mapping_).tail_pos().load(std::memory_order_acquire);
    if (options_.start == StartAt::end) {
        // Walk to the current end with the normal protocol, so last_sequence() is known and
        // a resize can later resume by sequence (§5.1.9.3).
        const uint64_t end = view(mapping_).write_pos().load(std::memory_order_acquire);
        ReaderStats saved = stats_;
        while (read_pos_ < end && read_one()) {}
        stats_ = saved;
    }
}

uint64_t RingReader::write_pos_now() const { return view(mapping_).write_pos().load(std::memory_order_acquire); }
uint64_t RingReader::tail_pos_now() const { return view(mapping_).tail_pos().load(std::memory_order_acquire); }

// PSD-003 §5.1.9.1, one event. Returns nullopt when read_pos has caught up with write_pos.
// inline (only this file calls it) so next() absorbs it: as an exported out-of-line call it
// went through the PLT and handed the optional back through memory, a third of the cost of
// draining ~100 B events (bench/consumer_bench.cpp, docs/PERFORMANCE.md).
inline std::optional<EventView> RingReader::read_one() {
    const detail::RingView v = view(mapping_);
    for (;;) {
        // Step 1. Acquire pairs with the producer's release store of write_pos (§5.1.8 step 8).
        const uint64_t write = v.write_pos().load(std::memory_order_acquire);
        if (write == read_pos_) return std::nullopt;
        // Step 2. Acquire pairs with the producer's release store of tail_pos (§5.1.8 step 6).
        const uint64_t tail = v.tail_pos().load(std::memory_order_acquire);
        if (read_pos_ < tail) {  // lapped: the skipped events surface as a sequence gap
            ++stats_.laps;
            stats_.lapped_bytes += tail - read_pos_;
            read_pos_ = tail;
            continue;
        }
        if (read_pos_ > write) {
            if (tail > write) {
                // tail_pos beyond the write_pos of step 1: the producer wrote more than a ring
                // between the two loads (write_pos has moved on), or its page is corrupt
                // (tail_pos > write_pos for good). Jumping to tail_pos again would loop forever
                // on the latter; there is nothing to read before write_pos moves, so wait there.
                if (v.write_pos().load(std::memory_order_acquire) != write) continue;
                ++stats_.corrupt_skips;
                read_pos_ = write;
                continue;
            }
            ++stats_.corrupt_skips;  // write_pos went back: only a corrupt header can lead here
            read_pos_ = tail;
            continue;
        }
        // §5.1.8 step 6 keeps write_pos - tail_pos <= capacity, and read_pos >= tail_pos now
        // (a tail_pos loaded after write_pos is only newer), so more than a ring's worth of bytes
        // before write_pos means a corrupt producer page: a copy bounded by write_pos alone could
        // run past the double mapping, and a drain would deliver stale bytes without end. The
        // event boundaries are lost up to write_pos, as in step 6.
        if (write - read_pos_ > mapping_.capacity()) {
            ++stats_.corrupt_skips;
            read_pos_ = write;
            continue;
        }
        const uint64_t saved_tail = tail;  // step 3

        // Step 4: read (copy out) the event. event_size is untrusted until step 5 says the
        // bytes were not being overwritten, so the copy is bounded by what write_pos says exists
        // (at most capacity, checked above: the double mapping holds the whole copy).
        const uint8_t* src = v.at(read_pos_);
        const uint32_t event_size = detail::RingView::load_le<uint32_t>(src + KMES_HDR_EVENT_SIZE);
        const uint32_t header_size = detail::RingView::load_le<uint32_t>(src + KMES_HDR_HEADER_SIZE);
        const bool plausible = event_size > 0 && event_size >= header_size && header_size >= KMES_BASE_HEADER_SIZE &&
                               event_size <= write - read_pos_;
        if (plausible) {
            if (copy_.size() < event_size) copy_.resize(event_size);  // grows to the largest event seen
            std::memcpy(copy_.data(), src, event_size);
        }
        // The copy must complete before tail_pos is re-read (seqlock reader pattern); pairs
        // with the release fence after the producer's tail_pos store.
        std::atomic_thread_fence(std::memory_order_acquire);
        KMES_SYNC_POINT("RingReader::read:after_copy");

        // Step 5: torn-read check.
        const uint64_t tail_after = v.tail_pos().load(std::memory_order_acquire);
        if (tail_after > saved_tail && read_pos_ < tail_after) {
            ++stats_.torn_reads;
            continue;
        }
        EventView event(std::span<const uint8_t>(copy_.data(), plausible ? event_size : 0));
        // Step 6: invalid size → corrupt. The spec says jump to tail_pos, but step 5 just
        // established tail_pos <= read_pos: jumping back would deliver events twice, staying
        // would loop forever. The event boundaries are lost up to write_pos, so go there; the
        // skipped events surface as a sequence gap.
        if (!plausible || !event.well_formed()) {
            ++stats_.corrupt_skips;
            read_pos_ = write;
            continue;
        }
        // Step 7.
        read_pos_ += event_size;
        last_sequence_ = event.sequence();
        ++stats_.events;
        stats_.bytes += event_size;
        return event;
    }
}

base::Result<std::optional<EventView>> RingReader::next() {
    if (auto event = read_one()) return event;
    // §5.1.9.3 generation check after a drain cycle. Acquire pairs with the release increment
    // in ProducerRing::retire, which follows the old ring's last write_pos store: once the
    // bump is seen, one more drain reaches the frozen write_pos.
    if (view(mapping_).generation().load(std::memory_order_acquire) == generation_) return std::optional<EventView>{};
    if (auto event = read_one()) return event;  // finish the old ring first
    if (base::Status s = switch_generation(); !s) return s.error();
    return read_one();
}

base::Status RingReader::switch_generation() {
    const uint64_t noted = last_sequence_;  // step 1
    auto fresh = options_.reattach(cpu_);   // steps 2–3
    if (!fresh) return fresh.error();
    if (base::Status s = fresh->verify(); !s) return s;
    // A ring of another KMES boot (the shim restarted): its sequences restarted at 1, so
    // resuming "after sequence N" would silently skip events. The caller must start over.
    const Guid unknown{};
    if (fresh->boot_id() != unknown && mapping_.boot_id() != unknown && fresh->boot_id() != mapping_.boot_id())
        return base::Error{ESTALE, "kmes-shimd restarted (new KMES boot id): sequences restart at 1; open a new reader"};
    mapping_ = std::move(*fresh);  // step 6: old fd closed, old ring unmapped
    // Step 4. If another swap retired the fresh ring already, its generation differs from
    // this value and the next check re-attaches again.
    generation_ = live_generation_of(mapping_);
    ++stats_.generation_changes;
    seek_after_sequence(noted);  // step 5
    return {};
}

void RingReader::seek_after_sequence(uint64_t after) {
    read_pos_ = view(mapping_).tail_pos().load(std::memory_order_acquire);
    ReaderStats saved = stats_;
    const uint64_t saved_last = last_sequence_;
    while (auto event = read_one()) {
        if (event->sequence() > after) {
            read_pos_ -= event->event_size();  // deliver this one next
            break;
        }
    }
    stats_ = saved;
    last_sequence_ = std::max(saved_last, after);
}

namespace {
// The need_wake byte counts the consumers of this ring that are about to sleep or sleeping
// (docs/ABI.md §3), so one consumer waking can never clear the flag of another that still
// sleeps: the byte is non-zero — "the producer wakes" (§5.1.7) — exactly while any consumer
// is inside its sleep window. A full byte (255 sleepers on one CPU) leaves the caller
// uncounted: it then polls with a short timeout instead (kUncountedWait).
constexpr uint8_t kMaxCountedSleepers = 255;
constexpr auto kUncountedWait = std::chrono::milliseconds(10);

// Seq_cst RMW; the caller's seq_cst fence after it orders it before the re-check loads.
bool count_sleeper(std::atomic_ref<uint8_t> sleepers) {
    uint8_t n = sleepers.load(std::memory_order_relaxed);
    do {
        if (n == kMaxCountedSleepers) return false;
    } while (!sleepers.compare_exchange_weak(n, static_cast<uint8_t>(n + 1), std::memory_order_seq_cst));
    return true;
}

// Relaxed: a count that stays high a moment longer only costs the producer a spurious wake.
// Never below zero: a foreign consumer following the spec's 1/0 flag protocol may have
// stored 0 meanwhile (then the count is only too low, as the flag protocol always was).
void uncount_sleeper(std::atomic_ref<uint8_t> sleepers) {
    uint8_t n = sleepers.load(std::memory_order_relaxed);
    while (n != 0 && !sleepers.compare_exchange_weak(n, static_cast<uint8_t>(n - 1), std::memory_order_relaxed)) {
    }
}
}  // namespace

// PSD-003 §5.1.9.2 in the order of DESIGN.md §7, with need_wake as a sleeper count.
WaitResult RingReader::wait(std::chrono::nanoseconds timeout) {
    const detail::RingView v = view(mapping_);
    auto data_ready = [&] {
        return v.write_pos().load(std::memory_order_acquire) != read_pos_ ||
               v.generation().load(std::memory_order_acquire) != generation_;
    };
    if (data_ready()) return WaitResult::data_ready;
    // Step 4's optional short spin, done before the sleeper is counted: a producer publishing
    // during the spin then sees need_wake == 0 and makes no FUTEX_WAKE call. Spinning while
    // counted cost the producer a wake call for almost every event while nobody slept
    // (bench/wakeup_bench.cpp, docs/PERFORMANCE.md). After the spin the handshake below runs
    // unchanged, so this is only a longer poll of the drain loop.
    for (uint32_t i = 0; i < options_.spin_iterations; ++i) {
        _mm_pause();
        if (data_ready()) return WaitResult::data_ready;
    }

    sleep_word_->store(v.futex_word(), std::memory_order_relaxed);  // for interrupt(): an address only
    const bool counted = count_sleeper(v.need_wake());
    if (!counted) timeout = std::min<std::chrono::nanoseconds>(timeout, kUncountedWait);
    uint32_t counter = 0;
    if (options_.wait_order == WaitOrder::safe) {
        // Full fence: the count is ordered before the loads below (StoreLoad). Pairs with the
        // producer's seq_cst fence between its write_pos store and its need_wake load: at
        // least one side sees the other's store.
        std::atomic_thread_fence(std::memory_order_seq_cst);
        // Read the counter *before* the final re-check: if the producer publishes after
        // the re-check, it also bumps the counter and futex_wait below returns at once.
        counter = v.futex_counter().load(std::memory_order_acquire);
        KMES_SYNC_POINT("RingReader::wait:after_counter_read");
        if (data_ready()) {
            if (counted) uncount_sleeper(v.need_wake());
            return WaitResult::data_ready;
        }
    } else {
        // PSD-003 §5.1.9.2 read literally: re-check, then read the counter. An event
        // published between the two is missed until the next one (the test shows it).
        if (data_ready()) {
            if (counted) uncount_sleeper(v.need_wake());
            return WaitResult::data_ready;
        }
        KMES_SYNC_POINT("RingReader::wait:after_recheck");
        counter = v.futex_counter().load(std::memory_order_acquire);
    }
    KMES_SYNC_POINT("RingReader::wait:before_futex_wait");
    ++stats_.sleeps;
    const auto secs = std::chrono::duration_cast<std::chrono::seconds>(timeout);
    struct timespec ts {
        static_cast<time_t>(secs.count()), static_cast<long>((timeout - secs).count())
    };
    const int rc = detail::futex_wait(v.futex_word(), counter, &ts);
    const bool timed_out = rc != 0 && errno == ETIMEDOUT;
    if (counted) uncount_sleeper(v.need_wake());
    return timed_out ? WaitResult::timed_out : WaitResult::woken;
}

void RingReader::interrupt() {
    // The word may belong to a mapping a generation change has just unmapped: futex_wake
    // then fails with EFAULT, or wakes an unrelated futex — a spurious wake-up, which every
    // futex waiter tolerates. The caller repeats the call until the consumer has stopped.
    if (const uint32_t* word = sleep_word_->load(std::memory_order_relaxed)) detail::futex_wake_all(word);
}

}  // namespace kmes
