// One writer thread per shard (PSD-008 §2.3.3, §2.4): the only user of the shard's read-write
// connection. Adaptive batches: commit at once when idle and the batch is non-empty, within
// MaxBatchLatencyMs of the batch's first event, and at MaxBatchSize; in between, batch about
// as many events as arrive during one commit (smoothed estimates, so bursty load does not
// flip between tiny and huge batches). Failed commits become gap records (§11.1).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "eventd/index/desired_set.hpp"
#include "eventd/ingest/handoff.hpp"
#include "eventd/ingest/index_maintenance.hpp"
#include "eventd/ingest/writer_settings.hpp"
#include "eventd/common/lock_order.hpp"
#include "seal/sealing_key.hpp"
#include "store/shard_db.hpp"

namespace eventd {

struct WriterStats {
    std::atomic<uint64_t> rows{0};
    std::atomic<uint64_t> batches{0};
    std::atomic<uint64_t> failed_batches{0};
    std::atomic<uint64_t> lost_events{0};
    // For `eventctl status`.
    std::atomic<uint64_t> last_commit_ns{0};   // wall clock of the last successful commit
    std::atomic<uint64_t> last_batch_size{0};  // records in it
    std::atomic<uint64_t> commit_ns_total{0};  // time spent in successful COMMITs
    // Records of a redelivering source (redelivery.hpp) found stored already, not stored again.
    std::atomic<uint64_t> duplicates{0};
    std::atomic<uint64_t> checkpoints{0};  // sealing checkpoints committed (issue 28)
    std::atomic<uint64_t> last_checkpoint_ns{0};  // wall clock of the newest
};

struct WriterHooks {
    // A commit failed: post a storage_error somewhere else (never this shard) and run retention.
    std::function<void(uint32_t shard_index, const std::string& error)> on_storage_error;
    // A transaction committed (rows are visible to readers now): wake live streams (§8.7.3).
    // Runs on the writer thread; must not block.
    std::function<void(uint32_t shard_index)> on_commit;
    // The writer thread stopped on an unexpected exception (thread_boundary.hpp): nothing
    // commits this shard any more, so the daemon must fail and restart.
    std::function<void(const std::string& why)> on_fatal;
};

class ShardWriter {
public:
    // `desired`: the global desired index set (§3.3.2) this shard converges to; null = the
    // shard's indexes are left alone (tools and tests that only write).
    ShardWriter(std::unique_ptr<store::ShardDb> db, const kmes::Guid& boot_id, WriterSettings& settings,
                WriterHooks hooks, const index::DesiredSetHolder* desired = nullptr);
    ~ShardWriter();

    uint32_t index() const { return db_->index(); }
    const std::filesystem::path& path() const { return db_->path(); }
    Handoff& handoff() { return handoff_; }
    // Queue a daemon-wide synthetic record regardless of the channel's capacity (rare).
    void post(HandoffItem item);
    // Issue 28: seal this shard with `sealer` (it outlives the writer) — a checkpoint with the
    // first commit, then every CheckpointIntervalSeconds, idle or not. The final one, after the
    // writer has finished, is the daemon's (Daemon::shutdown). Any thread, before or after
    // start() (a reload finds a new sealing key): the writer adopts it between transactions.
    void enable_sealing(seal::Sealer& sealer);
    bool sealing() const { return offered_sealer_.load(std::memory_order_acquire) != nullptr; }
    // Seal with the next commit, now if idle (VERIFY: nothing left unsealed); stats().checkpoints
    // counts it once committed. Any thread.
    void seal_now();
    void start();
    // After every producer has stopped: commit what is queued, then stop the thread.
    // request_finish() only asks (it returns at once); finish() asks and waits.
    void request_finish();
    void finish();
    const WriterStats& stats() const { return stats_; }

    // For the watchdog (issue 40; Daemon::stalled): the writer's loop turns, and whether it is
    // waiting for work now. A writer that is not waiting and whose turns stand still is stuck
    // (a commit that never returns, a lock never released). Any thread.
    uint64_t turns() const { return turns_.load(std::memory_order_relaxed); }
    bool waiting_for_work() const { return waiting_for_work_.load(std::memory_order_relaxed); }

    // Ring pressure from a drain thread feeding this shard, at every look at its ring
    // (ShardIndexMaintenance::report_ring_fill).
    void report_ring_fill(uint64_t fill, uint64_t capacity);
    ShardIndexStatus index_status() const;
    // The desired index set was published anew: an idle writer wakes for a quiet period.
    void desired_set_changed();

    // Retention runs its delete batches through this, between the writer's transactions
    // (PSD-008 §3.4 "per-shard mutex taken by retention for each batch"). Takes db_mutex_
    // (rank shard_db): the caller holds no lock of rank ≥ shard_db, and f takes none below urgent.
    template <class F>
    auto exclusive(F&& f) {
        std::lock_guard lock(db_mutex_);
        return f(*db_);
    }

    // Highest sequence per (boot, cpu) committed in this shard (for synthetic.shutdown).
    store::SequenceState committed_state();

private:
    void run();
    void begin_batch(std::chrono::steady_clock::time_point now);
    void write_lost_ranges();
    void store_redelivered(const HandoffItem& item);  // unless its source has it stored already
    void commit_batch();
    void seal_batch();  // the checkpoint as the open batch's last row (sealer_ set)
    void fail_batch(const std::string& error);
    // What a transaction's end leaves to tell — a storage error (on_storage_error), the
    // receipts it settled (RedeliveringSource::settled) — told with db_mutex_ released.
    void report_outcomes();
    std::chrono::milliseconds idle_wait() const;  // how long an idle writer waits for events
    void quiet_period();  // nothing to commit: one index convergence step; db_mutex_ not held


    std::unique_ptr<store::ShardDb> db_;
    // Lock order (lock_order.hpp): db_mutex_ (shard_db, 30) → urgent_mutex_ (urgent, 40) →
    // Handoff's mutex (leaf). db_mutex_ is held for the whole of each transaction — across loop
    // iterations and while pop() waits for more events (at most until the batch's latency
    // bound), which is how retention waits "between the writer's transactions". Hooks and
    // sources (on_storage_error, RedeliveringSource::settled) are called only after it is
    // released: nothing but this shard's own work runs under it.
    RankedMutex db_mutex_{LockRank::shard_db};
    kmes::Guid boot_id_;
    WriterSettings& settings_;
    WriterHooks hooks_;
    Handoff handoff_;
    RankedMutex urgent_mutex_{LockRank::urgent};  // any thread (post); leaf but for Handoff
    std::vector<HandoffItem> urgent_;             // daemon-wide synthetic records
    std::thread thread_;
    std::atomic<bool> finishing_{false};
    uint32_t channel_capacity_ = 0;
    std::atomic<uint64_t> turns_{0};           // relaxed: a progress sample, nothing published with it
    std::atomic<bool> waiting_for_work_{false};
    WriterStats stats_;

    // The open batch.
    bool in_transaction_ = false;
    bool batch_failed_ = false;
    std::string batch_error_;
    size_t batch_count_ = 0;
    std::chrono::steady_clock::time_point batch_started_;
    std::vector<Accounting> batch_accounting_;
    std::vector<store::EventRow> batch_records_;  // daemon-wide records in the open batch
    std::vector<HandoffItem::Receipt> batch_receipts_;  // redelivered records in the open batch
    uint64_t batch_duplicates_ = 0;                     // of them, stored already
    uint64_t batch_checkpoints_ = 0;                    // sealing checkpoints in the open batch
    std::vector<Accounting> lost_;                // ranges of failed batches, written as gaps at the next commit
    std::vector<store::EventRow> retained_;       // daemon-wide records of failed batches, retried
    bool failing_ = false;  // a commit failed and none succeeded since (one storage_error per episode)
    std::optional<std::string> storage_error_;  // to report once db_mutex_ is released
    // Receipts of ended batches with their outcome, to settle once db_mutex_ is released.
    std::vector<std::pair<std::vector<HandoffItem::Receipt>, bool>> unsettled_;

    // Sealing (null: the store has no sealing key). The next checkpoint is due at
    // next_checkpoint_. enable_sealing() offers the sealer (release), the writer thread adopts it
    // into sealer_ (acquire) — the Sealer was fully built before it was offered.
    void adopt_sealer(std::unique_lock<RankedMutex>& db_lock);
    std::atomic<seal::Sealer*> offered_sealer_{nullptr};
    seal::Sealer* sealer_ = nullptr;  // the writer thread's
    std::chrono::steady_clock::time_point next_checkpoint_{};  // the epoch: due at once
    // seal_now(): set by any thread, taken by the writer (relaxed: handoff_.kick()'s mutex orders
    // it before the writer's next look, and a missed look only delays the checkpoint).
    std::atomic<bool> seal_requested_{false};
    bool seal_failing_ = false;  // a checkpoint failed and none succeeded since (logged once)

    // Index maintenance between transactions (null when no desired set was given).
    std::unique_ptr<ShardIndexMaintenance> indexes_;

    // Smoothed estimates for the adaptive batch size.
    double arrival_rate_ = 0;    // events per second
    double commit_seconds_ = 0;  // duration of one COMMIT
    std::chrono::steady_clock::time_point last_arrival_;
};

}  // namespace eventd
