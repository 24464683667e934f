// What one shard writer does about its secondary indexes (PSD-008 §3.3.3–§3.3.5): converge
// toward the desired set in quiet periods, one statement at a time; shed under write
// pressure (graduated at commits, emergency on a ring-pressure signal); restore what was
// shed once the pressure is gone. Decisions only — the writer runs the statements
// (store::ShardDb::run_index_statement) and reports back with done(). Used by the writer
// thread alone; status() is a copy for other threads, taken under the writer's own lock.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "eventd/index/desired_set.hpp"
#include "store/secondary_index.hpp"

namespace eventd::index {

struct SheddingSettings {
    uint32_t window_seconds = 30;  // SheddingWindowSeconds
    uint32_t batch_percent = 75;   // SheddingBatchPercent
};

// For `eventctl status` (per shard).
struct ShardIndexCounters {
    uint64_t builds_started = 0;
    uint64_t builds_cancelled = 0;  // yielded to ingestion (§3.3.3)
    uint64_t builds_done = 0;
    uint64_t builds_failed = 0;  // an SQLite error (logged), retried later
    uint64_t dropped = 0;        // no longer desired
    uint64_t sheds_graduated = 0;
    uint64_t sheds_emergency = 0;  // indexes dropped by emergency shedding
    uint64_t restored = 0;         // rebuilt after being shed (§3.3.5)
};

struct IndexStep {
    enum class Kind { create, drop } kind = Kind::create;
    enum class Why { desired, restore, not_desired, graduated_shedding, emergency_shedding } why = Why::desired;
    std::string name;  // §3.3.7
    std::string sql;   // the one statement
};
// "desired", "restore after shedding", "no longer desired", "graduated shedding", …
const char* why_text(IndexStep::Why why);

class ShardIndexes {
public:
    using Clock = std::chrono::steady_clock;

    // `material`: the shard's secondary indexes as found in its schema (§3.3.9 step 5).
    explicit ShardIndexes(std::vector<std::string> material);

    // §3.3.3: the next statement for a quiet period, or none — converged, pressure not yet
    // over (§3.3.5), or backing off after a cancelled build. Drops of indexes that left the
    // desired set come first (they are fast and free disk), then the most important missing
    // index.
    std::optional<IndexStep> next_quiet_step(const DesiredSet& desired, Clock::time_point now) const;
    // §3.3.4 graduated shedding, evaluated at each commit of `batch` events: a drop of the
    // lowest-priority index while more than SheddingBatchPercent % of the batches of the last
    // SheddingWindowSeconds were above 75 % of `max_batch`.
    std::optional<IndexStep> on_commit(size_t batch, uint32_t max_batch, const SheddingSettings& settings,
                                       const DesiredSet& desired, Clock::time_point now);
    // §3.3.4 emergency shedding: every secondary index, at once (never idx_events_timestamp).
    std::vector<IndexStep> emergency(const SheddingSettings& settings, Clock::time_point now);

    enum class Outcome { done, cancelled, failed };
    void done(const IndexStep& step, Outcome outcome, Clock::time_point now);

    const std::set<std::string>& material() const { return material_; }
    // Desired indexes this shard lacks (invalid fields left out), in priority order.
    std::vector<std::string> missing(const DesiredSet& desired) const;
    // The shard has exactly the desired set's valid members: no quiet period has work here
    // (an idle writer need not wake for one).
    bool converged(const DesiredSet& desired) const;
    const ShardIndexCounters& counters() const { return counters_; }

private:
    std::optional<IndexStep> drop_step(const std::string& name, IndexStep::Why why) const;
    // The desired set's valid members with their names, in priority order.
    static std::vector<std::pair<std::string, store::SecondaryIndex>> named(const DesiredSet& desired);
    void pressure_seen(const SheddingSettings& settings, Clock::time_point now);

    std::set<std::string> material_;
    std::set<std::string> shed_;       // dropped by shedding, not yet restored
    Clock::time_point quiet_after_{};  // no creates before (pressure just seen, §3.3.5)
    Clock::time_point retry_after_{};  // no build before (a build was just cancelled or failed)
    std::chrono::seconds backoff_{0};
    struct BatchMark {
        Clock::time_point at;
        bool large;
    };
    std::deque<BatchMark> batches_;  // commits within the shedding window
    ShardIndexCounters counters_;
};

}  // namespace eventd::index
