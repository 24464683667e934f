// STATUS records (`eventctl status`, docs/QUERY-SERVER.md §Status): what the daemon knows
// about its rings, shards and throughput — every place that can lose or drop an event shows
// its counter here (STYLE.md "loss is a first-class output"). The query server adds
// {kind:"queries"}.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>

#include "base/guid_text.hpp"
#include "daemon.hpp"
#include "kmes/guid.hpp"
#include "protocol/status.hpp"
#include "store/shard_snapshot.hpp"
#include "eventd/ingest/synthetic.hpp"

namespace eventd {
namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

constexpr auto kRateWindow = std::chrono::seconds(10);
constexpr auto kCountBudget = std::chrono::seconds(2);  // all shards' row counts together

double round1(double v) { return std::round(v * 10) / 10; }

uint64_t file_bytes(const std::filesystem::path& p) {
    std::error_code ec;
    const auto n = std::filesystem::file_size(p, ec);
    return ec ? 0 : n;
}

// Rows stored in one shard file, counted on a read-only connection (never blocks the
// writer); nullopt when it could not be counted within the budget.
std::optional<uint64_t> count_rows(const store::ShardFile& file, Clock::time_point deadline) {
    auto snapshot = store::ShardSnapshot::open(file, store::ReadOptions{deadline, nullptr, {}});
    if (!snapshot) return std::nullopt;
    auto rows = snapshot->count_events();
    if (!rows) return std::nullopt;
    return *rows;
}

// The policy in force as STATUS shows it: refused, or what of it does not apply as written.
protocol::status::AccessPolicy access_policy_status(const access::Policy& policy) {
    protocol::status::AccessPolicy r;
    r.loaded_ns = policy.loaded_ns();
    r.refused = policy.problem().has_value();
    r.problem = policy.problem();
    r.patterns = policy.patterns().size();
    r.warnings = policy.warnings().size();
    r.deny_failing_closed = policy.failing_closed().size();
    for (const std::string& entry : policy.failing_closed())
        r.failing_closed = r.failing_closed ? *r.failing_closed + "; " + entry : entry;
    return r;
}

}  // namespace

void Daemon::tick() {
    if (!ready_.load()) return;  // source_ and writers_ are being built
    RateSample s{Clock::now(), source_->records_in(), 0};
    for (const auto& w : writers_) s.out += w->stats().rows.load(std::memory_order_relaxed);
    std::lock_guard lock(rates_mutex_);
    rate_samples_.push_back(s);
    // Keep one sample at least kRateWindow old as the base of the rates.
    while (rate_samples_.size() > 2 && s.at - rate_samples_[1].at >= kRateWindow) rate_samples_.pop_front();
}

std::optional<std::string> Daemon::stalled(Clock::duration limit) {
    if (!ready_.load()) return std::nullopt;  // starting: systemd's start timeout covers it
    const auto now = Clock::now();
    auto seconds = [](Clock::duration d) { return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(d).count()); };
    writer_progress_.resize(writers_.size());
    for (size_t i = 0; i < writers_.size(); ++i) {
        WriterProgress& p = writer_progress_[i];
        const uint64_t turns = writers_[i]->turns();
        if (turns != p.turns || writers_[i]->waiting_for_work() || p.since == Clock::time_point{}) {
            p = {turns, now};
        } else if (now - p.since >= limit) {
            return "shard writer " + std::to_string(i) + " has made no progress for " + seconds(now - p.since) + " s";
        }
    }
    if (server_) {
        server_->probe();
        if (const auto waited = server_->probe_unanswered_for(); waited >= limit)
            return "the query server's thread has not run for " + seconds(waited) + " s";
    }
    return std::nullopt;
}

std::vector<json> Daemon::status_records() const {
    std::vector<json> out;
    if (!ready_.load()) return out;  // still starting: source_ and writers_ are being built
    const auto now = std::chrono::system_clock::now();
    protocol::status::Daemon daemon;
    daemon.boot_id = base::guid_text(boot_id_);
    daemon.started_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(started_at_.time_since_epoch()).count();
    daemon.uptime_s = std::chrono::duration_cast<std::chrono::seconds>(now - started_at_).count();
    daemon.mode = source_->mode();
    daemon.cpus = source_->cpus().size();
    daemon.shards = writers_.size();
    out.push_back(protocol::status::to_record(daemon));
    source_->add_status_records(out);  // {kind:"ring"} per CPU, or {kind:"collector"}
    const uint64_t in = source_->records_in();
    uint64_t out_rows = 0;

    const auto count_deadline = Clock::now() + kCountBudget;
    for (const auto& w : writers_) {
        const WriterStats& s = w->stats();
        const uint64_t batches = s.batches.load(std::memory_order_relaxed);
        const uint64_t rows_written = s.rows.load(std::memory_order_relaxed);
        out_rows += rows_written;
        const std::filesystem::path wal = w->path().string() + "-wal";
        const std::optional<uint64_t> rows =
            count_rows(store::ShardFile{w->path(), w->path().filename().string(), w->index()}, count_deadline);
        protocol::status::Shard shard;
        shard.shard = w->index();
        shard.file = w->path().filename().string();
        shard.rows = rows;
        shard.rows_written = rows_written;
        shard.bytes = file_bytes(w->path()) + file_bytes(wal);
        if (const uint64_t last = s.last_commit_ns.load(std::memory_order_relaxed)) shard.last_commit_ns = last;
        shard.batches = batches;
        shard.avg_batch_size = batches ? round1(double(rows_written) / double(batches)) : 0.0;
        shard.last_batch_size = s.last_batch_size.load(std::memory_order_relaxed);
        shard.commit_ns_total = s.commit_ns_total.load(std::memory_order_relaxed);  // metrics: a summary's sum
        shard.commit_latency_ms = batches ? round1(double(shard.commit_ns_total) / double(batches) / 1e6) : 0.0;
        shard.failed_batches = s.failed_batches.load(std::memory_order_relaxed);
        shard.lost_events = s.lost_events.load(std::memory_order_relaxed);
        shard.queued = const_cast<ShardWriter&>(*w).handoff().size();
        out.push_back(protocol::status::to_record(shard));
    }
    // Secondary indexes (PSD-008 §3.3), one record per shard; lists as comma-separated text.
    auto joined = [](const std::vector<std::string>& names) {
        std::string out;
        for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
        return out.empty() ? std::string("none") : out;
    };
    for (const auto& w : writers_) {
        const ShardIndexStatus st = w->index_status();
        const index::ShardIndexCounters& c = st.counters;
        protocol::status::ShardIndexes ix;
        ix.shard = w->index();
        ix.indexes = joined(st.material);
        ix.missing = joined(st.missing);
        ix.building = st.building;
        ix.builds_started = c.builds_started;
        ix.builds_done = c.builds_done;
        ix.builds_cancelled = c.builds_cancelled;
        ix.builds_failed = c.builds_failed;
        ix.dropped = c.dropped;
        ix.sheds_graduated = c.sheds_graduated;
        ix.sheds_emergency = c.sheds_emergency;
        ix.restored = c.restored;
        out.push_back(protocol::status::to_record(ix));
    }

    // Events per second over the last ~10 s (samples taken by tick()), and now.
    double in_rate = 0, out_rate = 0, window = 0;
    {
        std::lock_guard lock(rates_mutex_);
        if (!rate_samples_.empty()) {
            const RateSample& base = rate_samples_.front();
            window = std::chrono::duration<double>(Clock::now() - base.at).count();
            if (window > 0.05) {
                in_rate = double(in - std::min(in, base.in)) / window;
                out_rate = double(out_rows - std::min(out_rows, base.out)) / window;
            }
        }
    }
    out.push_back(retention_->status_record());
    out.push_back(protocol::status::to_record(sealing_status()));
    if (policy_) out.push_back(protocol::status::to_record(access_policy_status(*policy_->get())));
    out.push_back(protocol::status::to_record(
        protocol::status::Rates{.events_in_per_s = round1(in_rate), .events_out_per_s = round1(out_rate),
                                .window_s = round1(window)}));
    if (index_policy_)
        for (json& r : index_policy_->status_records()) out.push_back(std::move(r));
    if (auto* d = detector_in_use_.load(std::memory_order_acquire)) out.push_back(d->status_record());
    return out;
}

protocol::status::Sealing Daemon::sealing_status() const {
    protocol::status::Sealing r;
    const seal::Sealer* sealer = sealer_in_use_.load(std::memory_order_acquire);
    r.sealed = sealer != nullptr;
    r.checkpoint_interval_s = settings_.checkpoint_interval_s.load(std::memory_order_relaxed);
    if (!sealer) {
        std::lock_guard lock(sealing_mutex_);
        r.problem = sealing_problem_;
        return r;
    }
    const seal::EpochSchedule& schedule = sealer->schedule();
    r.epoch = sealer->current_epoch();
    r.epoch_seconds = schedule.epoch_seconds;
    r.keys_end_ns = schedule.epoch_start_ns(schedule.epochs);
    uint64_t newest = 0;
    for (const auto& w : writers_) {
        r.checkpoints += w->stats().checkpoints.load(std::memory_order_relaxed);
        newest = std::max(newest, w->stats().last_checkpoint_ns.load(std::memory_order_relaxed));
    }
    if (newest) r.last_checkpoint_ns = newest;
    return r;
}

}  // namespace eventd
