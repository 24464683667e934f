#include "eventd/ingest/index_maintenance.hpp"

#include <spdlog/spdlog.h>

namespace eventd {
using base::Status;
namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

ShardIndexMaintenance::ShardIndexMaintenance(store::ShardDb& db, RankedMutex& db_mutex, const WriterSettings& settings,
                                             const index::DesiredSetHolder& desired,
                                             std::function<bool()> ingest_waiting)
    : db_(db),
      db_mutex_(db_mutex),
      settings_(settings),
      desired_(desired),
      ingest_waiting_(std::move(ingest_waiting)),
      indexes_(material_indexes(db)) {
    publish_status();
}

// §3.3.9 step 5: the shard's material indexes, from its schema. Nothing is built or dropped
// here: convergence resumes in the first quiet period.
std::vector<std::string> ShardIndexMaintenance::material_indexes(store::ShardDb& db) {
    auto material = db.secondary_indexes();
    if (material) return std::move(*material);
    spdlog::warn("shard {}: cannot list its indexes ({}); assuming none", db.index(), material.error().message);
    return {};
}

bool ShardIndexMaintenance::converged() const { return indexes_.converged(*desired_.current()); }

void ShardIndexMaintenance::report_ring_fill(uint64_t fill, uint64_t capacity) {
    if (capacity == 0) return;
    // Relaxed stores: flags polled by this shard's writer thread (build_must_yield, the
    // commit and quiet-period checks); they carry no data that must be seen with them.
    // A tenth of the ring: events are piling up while the writer builds (§3.3.3).
    if (fill * 10 >= capacity) yield_.store(true, std::memory_order_relaxed);
    // §3.3.4.1: the ring-pressure signal of emergency shedding.
    if (fill * 100 >= capacity * settings_.emergency_shedding_buffer_percent.load(std::memory_order_relaxed))
        emergency_.store(true, std::memory_order_relaxed);
}

bool ShardIndexMaintenance::build_must_yield() const {
    // On the writer thread, every ~1000 SQLite steps of a CREATE INDEX. ingest_waiting_ is
    // the other signal of §3.3.3 ("its shard's handoff backs up"), and the writer finishing.
    return yield_.load(std::memory_order_relaxed) || emergency_.load(std::memory_order_relaxed) || ingest_waiting_();
}

index::SheddingSettings ShardIndexMaintenance::shedding_settings() const {
    return {settings_.shedding_window_seconds.load(std::memory_order_relaxed),
            settings_.shedding_batch_percent.load(std::memory_order_relaxed)};
}

void ShardIndexMaintenance::after_commit(size_t batch, size_t channel_capacity) {
    const auto now = Clock::now();
    const auto settings = shedding_settings();
    if (emergency_.exchange(false, std::memory_order_relaxed)) {
        for (const index::IndexStep& step : indexes_.emergency(settings, now)) run_index_step(step);
    }
    const auto desired = desired_.current();
    if (auto step = indexes_.on_commit(batch, channel_capacity, settings, *desired, now)) run_index_step(*step);
}

void ShardIndexMaintenance::quiet_period() {
    const auto now = Clock::now();
    if (emergency_.exchange(false, std::memory_order_relaxed)) {
        for (const index::IndexStep& step : indexes_.emergency(shedding_settings(), now)) run_index_step(step);
        return;
    }
    const auto desired = desired_.current();
    if (auto step = indexes_.next_quiet_step(*desired, now)) {
        run_index_step(*step);
    } else if (desired->version != status_version_) {
        publish_status();  // the set changed with nothing to do here: "missing" is news
    }
}

void ShardIndexMaintenance::run_index_step(const index::IndexStep& step) {
    using Outcome = index::ShardIndexes::Outcome;
    const bool build = step.kind == index::IndexStep::Kind::create;
    if (build) {
        yield_.store(false, std::memory_order_relaxed);  // only pressure seen from now on counts
        std::lock_guard lock(status_mutex_);
        status_.building = step.name;
    }
    const auto started = Clock::now();
    Status status;
    {
        // Between transactions, like retention: the connection is the writer's alone.
        std::lock_guard lock(db_mutex_);
        // A drop is never cancelled: shedding drops are how pressure is relieved.
        status = db_.run_index_statement(step.sql, build ? std::function<bool()>([this] { return build_must_yield(); })
                                                         : std::function<bool()>([] { return false; }));
    }
    const auto now = Clock::now();
    const double ms = std::chrono::duration<double, std::milli>(now - started).count();
    const Outcome outcome = status                          ? Outcome::done
                            : status.error().is_cancelled() ? Outcome::cancelled
                                                            : Outcome::failed;
    indexes_.done(step, outcome, now);
    const char* why = index::why_text(step.why);
    if (outcome == Outcome::failed) {
        spdlog::warn("shard {}: {} of index {} ({}) failed after {:.0f} ms: {}; retried later", db_.index(),
                     build ? "build" : "drop", step.name, why, ms, status.error().message);
    } else if (outcome == Outcome::cancelled) {
        spdlog::info(
            "shard {}: build of index {} ({}) cancelled after {:.0f} ms: ingestion needs the shard; retried in "
            "a later quiet period",
            db_.index(), step.name, why, ms);
    } else {
        spdlog::info("shard {}: index {} {} ({}) in {:.0f} ms", db_.index(), step.name, build ? "built" : "dropped",
                     why, ms);
    }
    publish_status();
}

void ShardIndexMaintenance::publish_status() {
    const auto desired = desired_.current();
    status_version_ = desired->version;
    ShardIndexStatus status;
    status.material.assign(indexes_.material().begin(), indexes_.material().end());
    status.missing = indexes_.missing(*desired);
    status.counters = indexes_.counters();
    std::lock_guard lock(status_mutex_);
    status_ = std::move(status);
}

ShardIndexStatus ShardIndexMaintenance::status() const {
    std::lock_guard lock(status_mutex_);
    return status_;
}

}  // namespace eventd
