// One shard's secondary indexes, kept by its writer thread between transactions (PSD-008
// §3.3.3–§3.3.5): builds and drops in quiet periods, shedding after commits, emergency
// shedding under ring pressure, and the status `eventctl status` shows. The decisions are
// index::ShardIndexes'; this runs them on the shard's connection, under its lock, and cancels
// a build when ingestion needs the shard back.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "eventd/common/lock_order.hpp"
#include "eventd/index/desired_set.hpp"
#include "eventd/index/shard_indexes.hpp"
#include "eventd/ingest/writer_settings.hpp"
#include "store/shard_db.hpp"

namespace eventd {

// A shard's secondary indexes for `eventctl status` (a copy).
struct ShardIndexStatus {
    std::vector<std::string> material;
    std::vector<std::string> missing;  // desired, not (yet) in this shard
    index::ShardIndexCounters counters;
    std::optional<std::string> building;  // the index being built right now
};

class ShardIndexMaintenance {
public:
    // `db` and `db_mutex` are the writer's (they outlive this); `ingest_waiting` is asked
    // during a build whether ingestion is being held back (a backed-up handoff, a finishing
    // writer) — on the writer thread.
    ShardIndexMaintenance(store::ShardDb& db, RankedMutex& db_mutex, const WriterSettings& settings,
                          const index::DesiredSetHolder& desired, std::function<bool()> ingest_waiting);

    // Ring pressure from a drain thread feeding this shard (§3.3.3–§3.3.4.1), any thread:
    // fill = write_pos − read_pos. Above a tenth of the ring a running build is cancelled;
    // above EmergencySheddingBufferPercent every secondary index is dropped.
    void report_ring_fill(uint64_t fill, uint64_t capacity);

    // Writer thread, db_mutex not held: after a commit of `batch` records (shedding), and in
    // a quiet period (one convergence step).
    void after_commit(size_t batch, size_t channel_capacity);
    void quiet_period();
    // The shard has every desired index and no other (an idle writer need not look again).
    bool converged() const;
    ShardIndexStatus status() const;

private:
    static std::vector<std::string> material_indexes(store::ShardDb& db);
    void run_index_step(const index::IndexStep& step);
    bool build_must_yield() const;  // the progress handler's question during a CREATE INDEX
    index::SheddingSettings shedding_settings() const;
    void publish_status();

    store::ShardDb& db_;
    RankedMutex& db_mutex_;  // the writer's (rank shard_db): taken for each index statement
    const WriterSettings& settings_;
    const index::DesiredSetHolder& desired_;
    std::function<bool()> ingest_waiting_;
    index::ShardIndexes indexes_;  // writer thread only
    // Set by drain threads (report_ring_fill), read and cleared by the writer thread (the
    // progress handler polls yield_). Relaxed: flags, no data travels with them — what the
    // writer does next reads only its own state.
    std::atomic<bool> yield_{false};
    std::atomic<bool> emergency_{false};
    mutable std::mutex status_mutex_;  // leaf: status_
    ShardIndexStatus status_;
    uint64_t status_version_ = 0;  // of the desired set status_ was computed from
};

}  // namespace eventd
