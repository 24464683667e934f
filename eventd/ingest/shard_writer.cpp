#include "eventd/ingest/shard_writer.hpp"

#include <algorithm>
#include <map>

#include <spdlog/spdlog.h>

#include "base/sync_point.hpp"
#include "eventd/ingest/synthetic.hpp"
#include "base/thread_boundary.hpp"

namespace eventd {
using base::Status;
namespace {
using Clock = std::chrono::steady_clock;
constexpr double kSmoothing = 0.2;     // EWMA weight of a new observation
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
      handoff_(settings.max_batch_size.load()),
      desired_(desired) {
    if (!desired_) return;
    // §3.3.9 step 5: the shard's material indexes, from its schema. Nothing is built or
    // dropped here: convergence resumes in the first quiet period.
    auto material = db_->secondary_indexes();
    if (!material) {
        spdlog::warn("shard {}: cannot list its indexes ({}); assuming none", db_->index(), material.error().message);
    }
    indexes_ = std::make_unique<index::ShardIndexes>(material ? std::move(*material) : std::vector<std::string>{});
    publish_index_status();
}

ShardWriter::~ShardWriter() { finish(); }

void ShardWriter::post(HandoffItem item) {
    {
        std::lock_guard lock(urgent_mutex_);
        urgent_.push_back(std::move(item));
    }
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
        }
        items.clear();
        {
            std::lock_guard lock(urgent_mutex_);
            for (auto& u : urgent_) items.push_back(std::move(u));
            urgent_.clear();
        }
        // batch_count_ still counts the last committed batch until the next one begins.
        const size_t room = !in_transaction_ ? max_batch : batch_count_ < max_batch ? max_batch - batch_count_ : 0;
        if (items.empty())
            handoff_.pop(items, room, timeout);
        else
            handoff_.pop(items, room, std::chrono::milliseconds(0));

        // §11.1: what failed batches left behind (lost ranges, daemon-wide records) is retried
        // when idle too — every kRetryWait (idle_wait) — so it is recorded once space
        // returns even if no new event ever arrives for this shard, and at shutdown.
        const bool retry = items.empty() && !in_transaction_ && (!lost_.empty() || !retained_.empty());
        const bool last_round = items.empty() && finishing_.load() && handoff_.empty();
        if (!items.empty() || retry) {
            const auto now = Clock::now();
            if (!items.empty() && last_arrival_ != Clock::time_point{}) {
                const double dt = std::max(1e-6, std::chrono::duration<double>(now - last_arrival_).count());
                arrival_rate_ = (1 - kSmoothing) * arrival_rate_ + kSmoothing * (items.size() / dt);
            }
            if (!items.empty()) last_arrival_ = now;
            if (!in_transaction_) {
                db_lock.lock();  // retention waits between our transactions
                begin_batch(now);
            }
            for (HandoffItem& item : items) {
                if (item.ticket) {  // collected: JetStream delivers it again if this batch fails
                    batch_tickets_.push_back(item.ticket);
                    if (!batch_failed_) store_collected(item);
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
            report_storage_error();
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
        if (full || late || idle || finishing_.load()) {
            commit_batch();
            db_lock.unlock();
            report_storage_error();
            if (!finishing_.load()) {
                after_commit(batch_count_);
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
    if (indexes_ && !indexes_->converged(*desired_->current())) return kRetryWait;
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
    batch_tickets_.clear();
    batch_duplicates_ = 0;
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

// Issue 12 part 3: a collected record is stored unless this store holds it already — JetStream
// delivers a message again after a collector crash or an unacknowledged commit, and a host's
// forwarder may publish one twice beyond the stream's duplicate window. KMES events and gap
// records are known by their accounted sequences (this shard's, committed or in this
// transaction, and the other files'); other synthetic records by an identical stored row.
// Routing by (boot, cpu) (collector.cpp) sends every copy to this same shard.
void ShardWriter::store_collected(const HandoffItem& item) {
    bool stored_already = false;
    if (const auto& a = item.accounting) {
        const auto left = db_->unaccounted(item.row.boot_id, a->cpu_id, a->first, a->last, accounted_elsewhere_);
        stored_already = left.empty();
    } else {
        auto found = db_->contains_same(item.row);
        if (!found) {
            batch_failed_ = true;
            batch_error_ = found.error().message;
            return;
        }
        stored_already = *found;
    }
    if (stored_already) {
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
    stats_.duplicates.fetch_add(batch_duplicates_, std::memory_order_relaxed);
    if (!batch_tickets_.empty() && hooks_.on_collected) hooks_.on_collected(batch_tickets_, true);
    stats_.batches.fetch_add(1, std::memory_order_relaxed);
    stats_.last_batch_size.store(batch_count_, std::memory_order_relaxed);
    stats_.commit_ns_total.fetch_add(static_cast<uint64_t>(took * 1e9), std::memory_order_relaxed);
    stats_.last_commit_ns.store(synthetic::now_ns(), std::memory_order_relaxed);
    db_->checkpoint_if_needed();
    if (hooks_.on_commit) hooks_.on_commit(db_->index());
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
    // Collected records are not lost: unacknowledged (negatively), JetStream delivers them again.
    if (!batch_tickets_.empty() && hooks_.on_collected) hooks_.on_collected(batch_tickets_, false);
    stats_.failed_batches.fetch_add(1, std::memory_order_relaxed);
    stats_.lost_events.fetch_add(events, std::memory_order_relaxed);
    if (batch_count_ == 0 && failing_) return;  // an idle retry that failed again: nothing new to say
    spdlog::error("shard {}: commit of {} records failed: {}; lost {}{}", db_->index(), batch_count_, error,
                  describe(coalesce(batch_lost)),
                  batch_tickets_.empty() ? ""
                                         : "; " + std::to_string(batch_tickets_.size()) +
                                               " collected records will be delivered again");
    // One storage_error per failure episode (until the next successful commit): a record per
    // failed batch would, with every shard full, bounce between shards for ever — each failing
    // to store the other's record and posting a new one about it.
    if (!failing_) storage_error_ = error;  // reported once db_mutex_ is released (lock_order.hpp)
    failing_ = true;
}

void ShardWriter::report_storage_error() {
    if (!storage_error_) return;
    const std::string error = std::move(*storage_error_);
    storage_error_.reset();
    if (hooks_.on_storage_error) hooks_.on_storage_error(db_->index(), error);
}

// --- indexes (PSD-008 §3.3.3–§3.3.5) ------------------------------------------------------

void ShardWriter::report_ring_fill(uint64_t fill, uint64_t capacity) {
    if (!indexes_ || capacity == 0) return;
    // Relaxed stores: flags polled by this shard's writer thread (build_must_yield, the
    // commit and quiet-period checks); they carry no data that must be seen with them.
    // A tenth of the ring: events are piling up while the writer builds (§3.3.3).
    if (fill * 10 >= capacity) yield_.store(true, std::memory_order_relaxed);
    // §3.3.4.1: the ring-pressure signal of emergency shedding.
    if (fill * 100 >= capacity * settings_.emergency_shedding_buffer_percent.load(std::memory_order_relaxed))
        emergency_.store(true, std::memory_order_relaxed);
}

bool ShardWriter::build_must_yield() const {
    // On the writer thread, every ~1000 SQLite steps of a CREATE INDEX. The handoff filling
    // up is the other signal of §3.3.3 ("its shard's handoff backs up"); half of it is
    // already MaxBatchSize / 2 events kept waiting for the build.
    return yield_.load(std::memory_order_relaxed) || emergency_.load(std::memory_order_relaxed) ||
           finishing_.load(std::memory_order_relaxed) || handoff_.size() * 2 >= channel_capacity_;
}

index::SheddingSettings ShardWriter::shedding_settings() const {
    return {settings_.shedding_window_seconds.load(std::memory_order_relaxed),
            settings_.shedding_batch_percent.load(std::memory_order_relaxed)};
}

void ShardWriter::after_commit(size_t batch) {
    if (!indexes_) return;
    const auto now = Clock::now();
    const auto settings = shedding_settings();
    if (emergency_.exchange(false, std::memory_order_relaxed)) {
        for (const index::IndexStep& step : indexes_->emergency(settings, now)) run_index_step(step);
    }
    const auto desired = desired_->current();
    if (auto step = indexes_->on_commit(batch, channel_capacity_, settings, *desired, now)) run_index_step(*step);
}

void ShardWriter::quiet_period() {
    if (!indexes_) return;
    const auto now = Clock::now();
    if (emergency_.exchange(false, std::memory_order_relaxed)) {
        for (const index::IndexStep& step : indexes_->emergency(shedding_settings(), now)) run_index_step(step);
        return;
    }
    const auto desired = desired_->current();
    if (auto step = indexes_->next_quiet_step(*desired, now)) {
        run_index_step(*step);
    } else if (desired->version != status_version_) {
        publish_index_status();  // the set changed with nothing to do here: "missing" is news
    }
}

void ShardWriter::run_index_step(const index::IndexStep& step) {
    using Outcome = index::ShardIndexes::Outcome;
    const bool build = step.kind == index::IndexStep::Kind::create;
    if (build) {
        yield_.store(false, std::memory_order_relaxed);  // only pressure seen from now on counts
        std::lock_guard lock(index_status_mutex_);
        index_status_.building = step.name;
    }
    const auto started = Clock::now();
    Status status;
    {
        // Between transactions, like retention: the connection is the writer's alone.
        std::lock_guard lock(db_mutex_);
        // A drop is never cancelled: shedding drops are how pressure is relieved.
        status = db_->run_index_statement(step.sql, build ? std::function<bool()>([this] { return build_must_yield(); })
                                                          : std::function<bool()>([] { return false; }));
    }
    const auto now = Clock::now();
    const double ms = std::chrono::duration<double, std::milli>(now - started).count();
    const Outcome outcome = status                          ? Outcome::done
                            : status.error().is_cancelled() ? Outcome::cancelled
                                                            : Outcome::failed;
    indexes_->done(step, outcome, now);
    const char* why = index::why_text(step.why);
    if (outcome == Outcome::failed) {
        spdlog::warn("shard {}: {} of index {} ({}) failed after {:.0f} ms: {}; retried later", db_->index(),
                     build ? "build" : "drop", step.name, why, ms, status.error().message);
    } else if (outcome == Outcome::cancelled) {
        spdlog::info(
            "shard {}: build of index {} ({}) cancelled after {:.0f} ms: ingestion needs the shard; retried in "
            "a later quiet period",
            db_->index(), step.name, why, ms);
    } else {
        spdlog::info("shard {}: index {} {} ({}) in {:.0f} ms", db_->index(), step.name, build ? "built" : "dropped",
                     why, ms);
    }
    publish_index_status();
}

void ShardWriter::publish_index_status() {
    const auto desired = desired_->current();
    status_version_ = desired->version;
    ShardIndexStatus status;
    status.material.assign(indexes_->material().begin(), indexes_->material().end());
    status.missing = indexes_->missing(*desired);
    status.counters = indexes_->counters();
    std::lock_guard lock(index_status_mutex_);
    index_status_ = std::move(status);
}

ShardIndexStatus ShardWriter::index_status() const {
    std::lock_guard lock(index_status_mutex_);
    return index_status_;
}

}  // namespace eventd
