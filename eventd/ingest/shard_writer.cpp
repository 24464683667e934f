#include "eventd/ingest/shard_writer.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include <spdlog/spdlog.h>

#include "base/sync_point.hpp"
#include "seal/checkpoint.hpp"
#include "eventd/ingest/redelivery.hpp"
#include "eventd/ingest/synthetic.hpp"
#include "base/thread_boundary.hpp"

namespace eventd {
using base::Status;
namespace {
using Clock = std::chrono::steady_clock;
constexpr double kSmoothing = 0.2;     // EWMA weight of a new commit duration
// The arrival rate's memory: an observation after a gap of dt weighs
// 1 - exp(-dt / kRateMemorySeconds), so the rate forgets a burst within a few of these of quiet
// (docs/EVENTD.md §6). At the takes of a busy writer, one commit apart (about 5 ms), that is
// about the 0.2 of the commit estimate; the first take after a pause of 100 ms weighs 99 %.
constexpr double kRateMemorySeconds = 0.02;
constexpr size_t kMaxRetained = 1000;  // daemon-wide records kept from failed batches
// An idle writer with work only a timed-out wait starts (idle_wait) looks again this often;
// one with none sleeps kIdleWait, a bound that only limits how stale a missed wake could be.
constexpr auto kRetryWait = std::chrono::milliseconds(100);
constexpr auto kIdleWait = std::chrono::milliseconds(60000);
// At shutdown, further tries to record what failed batches lost (see run()).
constexpr int kShutdownRetries = 5;
constexpr auto kShutdownRetryWait = std::chrono::milliseconds(100);

std::string describe(const std::vector<Accounting>& ranges) {
    std::string out;
    for (const Accounting& a : ranges) {
        if (!out.empty()) out += ", ";
        out +=
            "cpu " + std::to_string(a.cpu_id) + " sequences " + std::to_string(a.first) + ".." + std::to_string(a.last);
    }
    return out.empty() ? "no KMES events" : out;
}

// Coalesce per CPU (the lost list grows one batch at a time).
std::vector<Accounting> coalesce(const std::vector<Accounting>& ranges) {
    std::map<uint16_t, store::SequenceRanges> per_cpu;
    for (const Accounting& a : ranges) per_cpu[a.cpu_id].add(a.first, a.last);
    std::vector<Accounting> out;
    for (const auto& [cpu, set] : per_cpu)
        for (const auto& [first, last] : set.ranges()) out.push_back(Accounting{cpu, first, last});
    return out;
}
}  // namespace

ShardWriter::ShardWriter(std::unique_ptr<store::ShardDb> db, const kmes::Guid& boot_id, WriterSettings& settings,
                         WriterHooks hooks, const index::DesiredSetHolder* desired)
    : db_(std::move(db)),
      boot_id_(boot_id),
      settings_(settings),
      hooks_(std::move(hooks)),
      handoff_(settings.max_batch_size.load()) {
    if (!desired) return;
    // Asked on this writer's thread during an index build: half the handoff is already
    // MaxBatchSize / 2 events kept waiting for it (§3.3.3 "its shard's handoff backs up").
    indexes_ = std::make_unique<ShardIndexMaintenance>(*db_, db_mutex_, settings_, *desired, [this] {
        turns_.fetch_add(1, std::memory_order_relaxed);  // a long build goes on: progress (the watchdog)
        return finishing_.load(std::memory_order_relaxed) || handoff_.size() * 2 >= channel_capacity_;
    });
}

void ShardWriter::report_ring_fill(uint64_t fill, uint64_t capacity) {
    if (indexes_) indexes_->report_ring_fill(fill, capacity);
}

ShardIndexStatus ShardWriter::index_status() const { return indexes_ ? indexes_->status() : ShardIndexStatus{}; }

void ShardWriter::quiet_period() {
    if (indexes_) indexes_->quiet_period();
}

ShardWriter::~ShardWriter() { finish(); }

void ShardWriter::post(HandoffItem item) {
    {
        std::lock_guard lock(urgent_mutex_);
        urgent_.push_back(std::move(item));
    }
    handoff_.kick();
}

void ShardWriter::enable_sealing(seal::Sealer& sealer) {
    offered_sealer_.store(&sealer, std::memory_order_release);
    handoff_.kick();
}

// On the writer thread, between transactions (db_mutex_ taken here: retention must not be
// inside the shard while the chain restarts).
void ShardWriter::adopt_sealer(std::unique_lock<RankedMutex>& db_lock) {
    seal::Sealer* offered = offered_sealer_.load(std::memory_order_acquire);
    if (!offered || sealer_) return;
    sealer_ = offered;
    next_checkpoint_ = Clock::now();
    if (db_->last_checkpoint()) return;
    // Never sealed: retention may have cut rows out anywhere, so the chain starts afresh
    // here; `eventctl verify` reports the rows before it as unprotected.
    const bool locked = db_lock.owns_lock();
    if (!locked) db_lock.lock();
    if (Status s = db_->restart_chain(); !s)
        spdlog::error("shard {}: cannot start its hash chain afresh: {}", db_->index(), s.error().message);
    if (!locked) db_lock.unlock();
}

void ShardWriter::seal_now() {
    if (!sealing()) return;
    seal_requested_.store(true, std::memory_order_relaxed);
    handoff_.kick();
}

void ShardWriter::start() {
    thread_ = std::thread([this] {
        base::run_guarded(
            "writer of shard " + std::to_string(db_->index()), [this] { run(); },
            [this](const std::string& why) {
                if (hooks_.on_fatal) hooks_.on_fatal(why);
            });
    });
}

void ShardWriter::request_finish() {
    finishing_.store(true);
    handoff_.close();
}

void ShardWriter::finish() {
    if (!thread_.joinable()) return;
    request_finish();
    thread_.join();
}

store::SequenceState ShardWriter::committed_state() {
    std::lock_guard lock(db_mutex_);
    return db_->sequence_state();
}

void ShardWriter::run() {
    std::vector<HandoffItem> items;
    std::unique_lock<RankedMutex> db_lock(db_mutex_, std::defer_lock);
    for (;;) {
        const uint32_t max_batch = settings_.max_batch_size.load(std::memory_order_relaxed);
        const auto latency = std::chrono::milliseconds(settings_.max_batch_latency_ms.load(std::memory_order_relaxed));
        const auto commit_delay = std::min(
            latency, std::chrono::milliseconds(settings_.commit_delay_ms.load(std::memory_order_relaxed)));
        if (max_batch != channel_capacity_) {  // MaxBatchSize changed at runtime
            channel_capacity_ = max_batch;
            handoff_.set_capacity(max_batch);
        }

        if (!in_transaction_ && !sealer_) adopt_sealer(db_lock);
        // Wait for events: long when idle, only until the latency bound inside a batch.
        // idle_wait() reads the desired index set: only asked when idle, not on every loop
        // of a batch.
        std::chrono::milliseconds timeout;
        if (in_transaction_) {
            const auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(batch_started_ + latency - Clock::now());
            timeout = std::clamp(left, std::chrono::milliseconds(0), std::chrono::milliseconds(2));
        } else {
            timeout = idle_wait();
            // A sealed shard checkpoints when idle too (issue 28): an unsealed tail is what an
            // attacker could still change.
            if (sealer_) {
                const auto until = std::chrono::ceil<std::chrono::milliseconds>(next_checkpoint_ - Clock::now());
                timeout = std::clamp(until, std::chrono::milliseconds(0), timeout);
            }
        }
        items.clear();
        {
            std::lock_guard lock(urgent_mutex_);
            for (auto& u : urgent_) items.push_back(std::move(u));
            urgent_.clear();
        }
        // batch_count_ still counts the last committed batch until the next one begins.
        const size_t room = !in_transaction_ ? max_batch : batch_count_ < max_batch ? max_batch - batch_count_ : 0;
        turns_.fetch_add(1, std::memory_order_relaxed);
        if (items.empty()) {
            // Waiting for work (or for the latency bound inside a batch, at most 2 ms): healthy
            // however long, so the watchdog does not take an idle writer for a stuck one.
            waiting_for_work_.store(!in_transaction_, std::memory_order_relaxed);
            handoff_.pop(items, room, timeout);
            waiting_for_work_.store(false, std::memory_order_relaxed);
        } else {
            handoff_.pop(items, room, std::chrono::milliseconds(0));
        }

        // §11.1: what failed batches left behind (lost ranges, daemon-wide records) is retried
        // when idle too — every kRetryWait (idle_wait) — so it is recorded once space
        // returns even if no new event ever arrives for this shard, and at shutdown.
        const bool retry = items.empty() && !in_transaction_ && (!lost_.empty() || !retained_.empty());
        const bool last_round = items.empty() && finishing_.load() && handoff_.empty();
        if (seal_requested_.exchange(false, std::memory_order_relaxed)) next_checkpoint_ = Clock::now();
        const bool checkpoint_due = sealer_ && !finishing_.load() && Clock::now() >= next_checkpoint_;
        if (!items.empty() || retry || checkpoint_due) {
            const auto now = Clock::now();
            if (!items.empty() && last_arrival_ != Clock::time_point{}) {
                // An EWMA over time, not over takes: weighted per take alike, the rate of a burst
                // outlived any pause, and the first event after it waited MaxBatchLatencyMs for
                // a flood that had ended (PSD-008 §2.4.2: nothing waiting → commit now).
                const double dt = std::max(1e-6, std::chrono::duration<double>(now - last_arrival_).count());
                const double weight = 1 - std::exp(-dt / kRateMemorySeconds);
                arrival_rate_ = (1 - weight) * arrival_rate_ + weight * (items.size() / dt);
            }
            if (!items.empty()) last_arrival_ = now;
            if (!in_transaction_) {
                db_lock.lock();  // retention waits between our transactions
                begin_batch(now);
            }
            for (HandoffItem& item : items) {
                if (item.receipt.source) {  // its source delivers it again if this batch fails
                    batch_receipts_.push_back(item.receipt);
                    if (!batch_failed_) store_redelivered(item);
                    continue;
                }
                if (item.accounting)
                    batch_accounting_.push_back(*item.accounting);
                else
                    batch_records_.push_back(item.row);  // kept for a retry if the batch fails
                if (batch_failed_) continue;
                Status s = db_->insert(item.row);
                if (s && item.accounting)
                    s = db_->account(item.row.boot_id, item.accounting->cpu_id, item.accounting->first,
                                     item.accounting->last);
                if (!s) {
                    batch_failed_ = true;
                    batch_error_ = s.error().message;
                }
            }
            batch_count_ += items.size();
        }
        if (last_round) {
            if (in_transaction_) commit_batch();
            // §11.1 counts on the restart gap when the lost list dies with eventd, but after the
            // shim's death no later eventd will ever read this boot again: what failed batches
            // lost must be recorded now. A few more bounded tries (§10.2: shutdown is bounded);
            // a store that still fails leaves it in the log line of each failed batch.
            for (int attempt = 0; attempt < kShutdownRetries && (!lost_.empty() || !retained_.empty()); ++attempt) {
                std::this_thread::sleep_for(kShutdownRetryWait);
                if (!db_lock.owns_lock()) db_lock.lock();
                begin_batch(Clock::now());
                commit_batch();
            }
            if (db_lock.owns_lock()) db_lock.unlock();
            report_outcomes();
            return;
        }
        if (!in_transaction_) {
            // Nothing pending and no batch open: a quiet period (§3.3.3).
            if (items.empty() && !finishing_.load()) quiet_period();
            continue;
        }

        // Commit decision (§2.4.2).
        const bool full = batch_count_ >= max_batch;
        const bool late = Clock::now() - batch_started_ >= latency;
        // Idle: commit unless more events than the batch holds are expected to arrive during
        // one commit anyway (then batching them costs no latency and saves a commit).
        // With CommitDelayMs, an idle batch also waits that long after its first event (group
        // commit: a trickle of events shares one fsync; power loss may take that much more).
        const bool idle = handoff_.empty() && arrival_rate_ * commit_seconds_ < double(batch_count_) &&
                          Clock::now() - batch_started_ >= commit_delay;
        if (full || late || idle || checkpoint_due || finishing_.load()) {
            commit_batch();
            db_lock.unlock();
            report_outcomes();
            if (!finishing_.load()) {
                if (indexes_) indexes_->after_commit(batch_count_, channel_capacity_);
                // Nothing waiting right after a commit is a quiet period too: under a steady
                // trickle the idle wait below never times out, and indexes must still be
                // built. A build then holds the trickle back only until pressure cancels it.
                if (handoff_.empty()) quiet_period();
            }
        }
    }
}

std::chrono::milliseconds ShardWriter::idle_wait() const {
    // Work only a timed-out wait starts: retrying what failed batches left (§11.1), and index
    // statements, which run in quiet periods (§3.3.3) — including a build backing off or a
    // shed index waiting for its restore. Without either an idle writer sleeps until events,
    // a post, a changed desired set (desired_set_changed) or finish() wake it.
    if (!lost_.empty() || !retained_.empty()) return kRetryWait;
    if (indexes_ && !indexes_->converged()) return kRetryWait;
    return kIdleWait;
}

void ShardWriter::desired_set_changed() { handoff_.kick(); }

// A new transaction (db_mutex_ held): §11.1's gap records of earlier failed batches first.
void ShardWriter::begin_batch(Clock::time_point now) {
    in_transaction_ = true;
    batch_failed_ = false;
    batch_count_ = 0;
    batch_accounting_.clear();
    batch_records_.clear();
    batch_receipts_.clear();
    batch_duplicates_ = 0;
    batch_checkpoints_ = 0;
    batch_started_ = now;
    if (Status s = db_->begin(); !s) {
        batch_failed_ = true;
        batch_error_ = s.error().message;
    }
    write_lost_ranges();  // §11.1: before any new event
}

// Gap records for the ranges of earlier failed batches, and the daemon-wide records those
// batches held, first in the new transaction.
void ShardWriter::write_lost_ranges() {
    if (batch_failed_) return;
    for (const store::EventRow& row : retained_) {
        if (Status s = db_->insert(row); !s) {
            batch_failed_ = true;
            batch_error_ = s.error().message;
            return;
        }
    }
    if (lost_.empty()) return;
    const uint64_t now = synthetic::now_ns();
    for (const Accounting& a : coalesce(lost_)) {
        Status s = db_->insert(synthetic::gap(boot_id_, a.cpu_id, a.first, a.last, std::nullopt, now));
        if (s) s = db_->account(boot_id_, a.cpu_id, a.first, a.last);
        if (!s) {
            batch_failed_ = true;
            batch_error_ = s.error().message;
            return;
        }
    }
}

// A record of a redelivering source (redelivery.hpp) is stored unless that source finds it
// stored already; the check runs in this transaction, so the batch's own rows count.
void ShardWriter::store_redelivered(const HandoffItem& item) {
    auto stored_already = item.receipt.source->stored_already(*db_, item);
    if (!stored_already) {
        batch_failed_ = true;
        batch_error_ = stored_already.error().message;
        return;
    }
    if (*stored_already) {
        ++batch_duplicates_;
        return;
    }
    Status s = db_->insert(item.row);
    if (s && item.accounting)
        s = db_->account(item.row.boot_id, item.accounting->cpu_id, item.accounting->first, item.accounting->last);
    if (!s) {
        batch_failed_ = true;
        batch_error_ = s.error().message;
    }
}

void ShardWriter::commit_batch() {
    in_transaction_ = false;
    // Tests hold or slow the commit here (a slow disk: test_hooks.hpp; retention vs writer).
    KMES_SYNC_POINT("ShardWriter::commit_batch:before_commit");
    if (batch_failed_) {
        db_->rollback();
        fail_batch(batch_error_);
        return;
    }
    if (sealer_ && Clock::now() >= next_checkpoint_) seal_batch();
    const auto started = Clock::now();
    if (Status s = db_->commit(); !s) {
        fail_batch(s.error().message);
        return;
    }
    const double took = std::chrono::duration<double>(Clock::now() - started).count();
    commit_seconds_ = commit_seconds_ == 0 ? took : (1 - kSmoothing) * commit_seconds_ + kSmoothing * took;
    if (!lost_.empty()) {
        spdlog::info("shard {}: recorded earlier lost ranges as gaps: {}", db_->index(), describe(coalesce(lost_)));
        lost_.clear();
    }
    retained_.clear();
    failing_ = false;
    stats_.rows.fetch_add(batch_count_ - batch_duplicates_, std::memory_order_relaxed);
    if (const uint64_t sealed = std::exchange(batch_checkpoints_, 0)) {
        stats_.checkpoints.fetch_add(sealed, std::memory_order_relaxed);
        stats_.last_checkpoint_ns.store(synthetic::now_ns(), std::memory_order_relaxed);
    }
    stats_.duplicates.fetch_add(batch_duplicates_, std::memory_order_relaxed);
    if (!batch_receipts_.empty()) unsettled_.emplace_back(std::move(batch_receipts_), true);
    stats_.batches.fetch_add(1, std::memory_order_relaxed);
    stats_.last_batch_size.store(batch_count_, std::memory_order_relaxed);
    stats_.commit_ns_total.fetch_add(static_cast<uint64_t>(took * 1e9), std::memory_order_relaxed);
    stats_.last_commit_ns.store(synthetic::now_ns(), std::memory_order_relaxed);
    // Streams learn of the commit first: a checkpoint copies up to the whole WAL into the file
    // (tens of ms after a burst that readers held back), and nothing committed waits for it.
    if (hooks_.on_commit) hooks_.on_commit(db_->index());
    db_->checkpoint_if_needed();
}

void ShardWriter::seal_batch() {
    const uint32_t interval = settings_.checkpoint_interval_s.load(std::memory_order_relaxed);
    next_checkpoint_ = Clock::now() + std::chrono::seconds(interval);
    // The checkpoint's row is not an event: it takes no place in the batch's accounting, but it
    // is a row (stats_.rows).
    Status s = seal::seal_shard(*db_, *sealer_, boot_id_, synthetic::now_ns(), interval, false);
    if (s) {
        ++batch_count_;
        ++batch_checkpoints_;
        if (seal_failing_) spdlog::info("shard {}: sealing works again", db_->index());
        seal_failing_ = false;
        return;
    }
    // The rows still commit: an unsealed stretch is reported by `eventctl verify`, a lost event
    // would not be.
    if (!seal_failing_) spdlog::error("shard {}: cannot seal: {}", db_->index(), s.error().message);
    seal_failing_ = true;
}

void ShardWriter::fail_batch(const std::string& error) {
    // §11.1: the batch is lost (already consumed from the rings). Keep its ranges — together
    // with earlier lost ones — to write as gaps at the next successful commit; say so now.
    uint64_t events = 0;
    std::vector<Accounting> batch_lost;
    for (Accounting a : batch_accounting_) {
        // Sequence 0 is the "boot started" marker of synthetic.startup, never an event.
        if (a.first == 0) a.first = 1;
        if (a.first > a.last) continue;
        events += a.last - a.first + 1;
        batch_lost.push_back(a);
    }
    lost_.insert(lost_.end(), batch_lost.begin(), batch_lost.end());
    lost_ = coalesce(lost_);
    // Daemon-wide records (storage_error, config_change, startup) are retried, not lost; the
    // bound only matters if a shard fails for a very long time.
    for (store::EventRow& row : batch_records_)
        if (retained_.size() < kMaxRetained) retained_.push_back(std::move(row));
    batch_records_.clear();
    // Redelivered records are not lost: their source delivers them again once told (settled).
    const size_t redelivered = batch_receipts_.size();
    if (!batch_receipts_.empty()) unsettled_.emplace_back(std::move(batch_receipts_), false);
    stats_.failed_batches.fetch_add(1, std::memory_order_relaxed);
    stats_.lost_events.fetch_add(events, std::memory_order_relaxed);
    if (batch_count_ == 0 && failing_) return;  // an idle retry that failed again: nothing new to say
    spdlog::error("shard {}: commit of {} records failed: {}; lost {}{}", db_->index(), batch_count_, error,
                  describe(coalesce(batch_lost)),
                  redelivered == 0 ? ""
                                   : "; " + std::to_string(redelivered) + " records will be delivered again by their source");
    // One storage_error per failure episode (until the next successful commit): a record per
    // failed batch would, with every shard full, bounce between shards for ever — each failing
    // to store the other's record and posting a new one about it.
    if (!failing_) storage_error_ = error;  // reported once db_mutex_ is released (lock_order.hpp)
    failing_ = true;
}

void ShardWriter::report_outcomes() {
    // Settled receipts, grouped by source (in practice one: the collector).
    for (auto& [receipts, committed] : unsettled_) {
        while (!receipts.empty()) {
            RedeliveringSource* source = receipts.front().source;
            std::vector<uint64_t> ids;
            std::erase_if(receipts, [&](const HandoffItem::Receipt& r) {
                if (r.source != source) return false;
                ids.push_back(r.id);
                return true;
            });
            source->settled(ids, committed);
        }
    }
    unsettled_.clear();
    if (!storage_error_) return;
    const std::string error = std::move(*storage_error_);
    storage_error_.reset();
    if (hooks_.on_storage_error) hooks_.on_storage_error(db_->index(), error);
}

}  // namespace eventd
