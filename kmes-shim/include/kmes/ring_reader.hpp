// RingReader: one consumer of one CPU's ring — the whole PSD-003 §5.1.9 consumer side.
//
//   next()   §5.1.9.1 drain loop: acquire loads, lapping → tail_pos, saved-tail torn-read
//            re-check, event_size validation with a jump to write_pos on corruption (not
//            tail_pos as the spec says: ring_reader.cpp step 6 explains why), copy-out
//            bounded by event_size. When the ring is empty it performs the §5.1.9.3
//            generation check: the old ring is drained to its frozen write_pos first, then
//            the reader re-attaches and resumes after the last sequence it delivered.
//   wait()   §5.1.9.2 notification wait in the order of DESIGN.md §7.
//
// A reader is used by one thread. Several readers (in one or many processes) may read the
// same ring; each has its own read position.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "kmes/event.hpp"
#include "base/result.hpp"

namespace kmes {

// An attachment plus its §5.1.5 mapping. Owns both; moving transfers ownership.
class RingMapping {
public:
    // kmes_attach(cpu) + kmes_map.
    static base::Result<RingMapping> attach(uint32_t cpu);
    // Adopt an existing mapping (fd may be -1). With owns_mapping the destructor unmaps it.
    // live_generation: the generation the ring was created with, if known (0: unknown, read
    // from the ring instead — racy against a swap that retires the ring meanwhile).
    RingMapping(int fd, uint8_t* base, uint64_t capacity, bool owns_mapping, uint64_t live_generation = 0);
    RingMapping(RingMapping&& other) noexcept;
    RingMapping& operator=(RingMapping&& other) noexcept;
    ~RingMapping();

    uint8_t* base() const { return base_; }
    uint64_t capacity() const { return capacity_; }
    int fd() const { return fd_; }
    // The ring's generation while it is live, as the shim reported at attach; 0 if unknown.
    // A ring whose current generation differs has been retired by a swap (§5.1.9.4).
    uint64_t live_generation() const { return live_generation_; }
    // KMES boot id of the shim the ring belongs to (all zero if unknown, e.g. adopted).
    const Guid& boot_id() const { return boot_id_; }

    // Verify magic, version and the capacity in the header (DESIGN.md §4 startup checks).
    base::Status verify() const;

private:
    void release();
    int fd_ = -1;
    uint8_t* base_ = nullptr;
    uint64_t capacity_ = 0;
    bool owns_ = false;
    uint64_t live_generation_ = 0;
    Guid boot_id_{};
};

enum class StartAt { tail, end };  // oldest surviving event, or only events written from now on

enum class WaitResult { data_ready, woken, timed_out };

// Order of the notification handshake. Only tests use SpecLiteral, to show the lost wake-up
// of PSD-003 §5.1.9.2 read literally (DESIGN.md §7).
enum class WaitOrder { safe, spec_literal };

struct ReaderOptions {
    StartAt start = StartAt::tail;
    uint32_t spin_iterations = 0;  // optional short spin re-checking write_pos before sleeping
    WaitOrder wait_order = WaitOrder::safe;
    // How to get a fresh mapping of this CPU after a generation change; default kmes_attach.
    std::function<base::Result<RingMapping>(uint32_t cpu)> reattach;
};

// Everything a reader skipped or repaired; loss is a first-class output.
struct ReaderStats {
    uint64_t events = 0;
    uint64_t bytes = 0;
    uint64_t laps = 0;           // times read_pos fell behind tail_pos (§5.1.9.1 step 2)
    uint64_t lapped_bytes = 0;   // bytes skipped by those jumps
    uint64_t torn_reads = 0;     // copies discarded by the step-5 re-check
    uint64_t corrupt_skips = 0;  // invalid event_size → jump to write_pos (step 6)
    uint64_t generation_changes = 0;
    uint64_t sleeps = 0;  // futex_wait calls
};

class RingReader {
public:
    static base::Result<RingReader> open(uint32_t cpu, ReaderOptions options = {});
    RingReader(uint32_t cpu, RingMapping mapping, ReaderOptions options);

    // The next event, copied out; the view stays valid until the next call. nullopt when the
    // ring holds nothing new. An Error only when a re-attach after a resize fails.
    base::Result<std::optional<EventView>> next();

    // Sleep until new data may be there, or timeout. Returns at once if data is already there.
    WaitResult wait(std::chrono::nanoseconds timeout);

    // The one member safe to call from another thread: wakes a wait() asleep now (it returns
    // woken). A wait() about to call futex_wait can still fall asleep after it (the wake cannot
    // change the read-only futex word), so a thread that needs the consumer to notice something
    // calls this again until it has (eventd's shutdown: every millisecond).
    void interrupt();

    uint32_t cpu() const { return cpu_; }
    uint64_t read_pos() const { return read_pos_; }
    uint64_t capacity() const { return mapping_.capacity(); }
    uint64_t generation() const { return generation_; }
    uint64_t last_sequence() const { return last_sequence_; }  // 0 before the first event
    const ReaderStats& stats() const { return stats_; }
    const RingMapping& mapping() const { return mapping_; }

    // Ring state as seen now (acquire loads), for --info and lag reporting.
    uint64_t write_pos_now() const;
    uint64_t tail_pos_now() const;

    // Position the reader at the first event with sequence > `after` (scan from tail_pos).
    // Used after a generation change and by eventd to resume after a restart.
    void seek_after_sequence(uint64_t after);

private:
    std::optional<EventView> read_one();
    base::Status switch_generation();

    uint32_t cpu_;
    RingMapping mapping_;
    ReaderOptions options_;
    uint64_t read_pos_ = 0;
    uint64_t generation_ = 0;
    uint64_t last_sequence_ = 0;
    std::vector<uint8_t> copy_;  // copy-out buffer; grows to the largest event read
    ReaderStats stats_;
    // The futex word wait() sleeps on, for interrupt() on another thread; on the heap so the
    // reader stays movable.
    std::unique_ptr<std::atomic<const uint32_t*>> sleep_word_ = std::make_unique<std::atomic<const uint32_t*>>(nullptr);
};

}  // namespace kmes
