// The invariants every eventd integration test checks (DESIGN.md §3.1–§3.2), and the tools to
// know what was emitted:
//
//   for every (boot, cpu):  stored KMES rows + Σ count of that CPU's synthetic.gap records
//                           == highest sequence emitted on that CPU
//   no (boot_id, cpu_id, sequence) stored twice
//   no gap range holds a stored row of its CPU (nor overlaps another gap)
//
// "Highest emitted" comes from the rings themselves: a RingWatch attaches a test-side reader to
// every ring and reads the last event once emission has stopped. Emission stops by freezing
// kmes-shimd (SIGSTOP; its built-in generators stop with it while the shared-memory rings stay
// readable), which is what a ShimFreeze does.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kmes/ring_reader.hpp"
#include "support/store_reader.hpp"

namespace eventd::it {

using Highest = std::map<uint16_t, uint64_t>;  // cpu → highest sequence emitted

struct GapRecord {
    uint64_t first = 0;
    uint64_t last = 0;
    uint64_t count = 0;
    std::optional<uint64_t> last_seen_timestamp;
    uint64_t revealing_timestamp = 0;
    uint64_t recorded_at = 0;  // the row's timestamp (eventd's clock when it noticed)
    std::string file;
};

struct CpuAccount {
    uint64_t highest = 0;
    uint64_t stored = 0;
    uint64_t lost = 0;  // Σ gap counts
    std::vector<GapRecord> gaps;
    std::map<uint64_t, uint64_t> timestamp_of;  // sequence → timestamp of its stored row (when asked)
};

struct AccountingReport {
    std::map<uint16_t, CpuAccount> cpus;
    std::vector<std::string> errors;  // every violation found (first few hundred)
    uint64_t stored() const;
    uint64_t lost() const;
    size_t gap_records() const;
    std::string summary() const;  // per CPU: highest, stored, lost, gaps
};

// Check the invariants for `boot` over every row of `store` (rows of other boots are only
// checked for duplicates). With keep_timestamps the report maps sequences to row timestamps.
AccountingReport account(const StoreContents& store, const Guid& boot, const Highest& highest,
                         bool keep_timestamps = false);
// account() plus Catch2 CHECKs: no violations, and one KMES row or gap per sequence 1..highest.
AccountingReport check_accounting(const StoreContents& store, const Guid& boot, const Highest& highest,
                                  bool keep_timestamps = false);

// The persisted per-boot sequence state (DESIGN.md §4.3) after eventd caught up and stopped:
// for every CPU the ranges of all shards together cover exactly 1..highest (plus the boot's
// "started" marker, sequence 0 of CPU 0), and no sequence is accounted in two shards.
void check_sequence_state(const std::string& store_dir, const Guid& boot, const Highest& highest);

// Test-side readers of rings 0..cpus-1 (from tail_pos), attached at construction.
class RingWatch {
public:
    explicit RingWatch(uint32_t cpus);
    // Drain every ring now; the highest sequence seen on each CPU so far.
    Highest highest();
    // Σ write_pos over the rings: bytes ever written (cheap; no reading).
    uint64_t bytes_written() const;
    // Wake every consumer asleep on these rings (a futex wake on each ring's word; spurious
    // wake-ups are harmless to every waiter). For a frozen shim: a SIGSTOP that lands between a
    // publish and its wake-up (PSD-003 §5.1.8 step 9) leaves an idle consumer asleep, the last batch
    // unread, until its own bound — eventd's drain threads: 60 s. Call highest() first.
    void wake_consumers();

private:
    std::vector<kmes::RingReader> readers_;
    Highest highest_;
};

// Freezes a process (SIGSTOP, waits for the stopped state); the destructor thaws it.
class ProcessFreeze {
public:
    explicit ProcessFreeze(pid_t pid);
    ~ProcessFreeze();
    ProcessFreeze(const ProcessFreeze&) = delete;
    ProcessFreeze& operator=(const ProcessFreeze&) = delete;

private:
    pid_t pid_;
};

// Σ over the store's sequence_state of the sequences 1..highest[cpu] accounted for, per CPU.
std::map<uint16_t, uint64_t> accounted_per_cpu(const std::string& store_dir, const Guid& boot, const Highest& highest);
// Poll sequence_state until every CPU has all of 1..highest accounted for (eventd caught up).
// False after `timeout`; *status then says how far each CPU got. `each_poll` runs before every
// look at the store.
bool wait_accounted(const std::string& store_dir, const Guid& boot, const Highest& highest,
                    std::chrono::milliseconds timeout, std::string* status,
                    const std::function<void()>& each_poll = {});

// The KMES boot id of the shim this process talks to ($KMES_SOCKET).
Guid current_boot_id();

// Wall clock in ns since the epoch (the clock of event and synthetic timestamps).
uint64_t wall_ns();

}  // namespace eventd::it
