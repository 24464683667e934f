// Graceful shutdown (PSD-008 §10.2) and diagnostics.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <thread>

#include <spdlog/spdlog.h>

#include "base/guid_text.hpp"
#include "daemon.hpp"
#include "kmes/guid.hpp"
#include "eventd/ingest/synthetic.hpp"

namespace eventd {
namespace {
constexpr size_t kShardClosers = 16;

// Closing a shard checkpoints its WAL into the database file and syncs it; one after another
// that is most of a many-shard shutdown. Side by side the syncs overlap. Every writer has
// finished already: nothing else touches them.
void close_shards_side_by_side(std::vector<std::unique_ptr<ShardWriter>>& writers) {
    std::atomic<size_t> next{0};
    auto close_some = [&] {
        for (size_t i = next++; i < writers.size(); i = next++) writers[i].reset();
    };
    std::vector<std::thread> closers;
    for (size_t t = 1; t < std::min(kShardClosers, writers.size()); ++t) closers.emplace_back(close_some);
    close_some();
    for (auto& t : closers) t.join();
    writers.clear();
}
}  // namespace

Daemon::~Daemon() {
    shutdown(false);
    if (failure_fd_ >= 0) close(failure_fd_);
    if (shim_watch_fd_ >= 0) close(shim_watch_fd_);
}

void Daemon::shutdown(bool dump) {
    if (shut_down_) return;
    shut_down_ = true;
    if (dump) dump_diagnostics();
    // 1. Stop accepting queries and end the running ones — streams get "eventd is shutting
    // down" — before anything else stops (the server object stays until the writers are gone:
    // their on_commit hook still reaches it).
    stopping_.store(true);
    retention_wake_.notify_all();
    if (server_) server_->stop();
    if (query_fd_ >= 0) close(query_fd_);  // startup failed before the server took it
    query_fd_ = -1;
    if (query_socket_bound_) unlink(config_.query_socket_path.c_str());
    if (retention_thread_.joinable()) retention_thread_.join();
    // 2. The policy thread saves the query counters a last time (no query counts any more).
    if (index_policy_) index_policy_->stop();
    // 3. Final drain: every drain thread reads what is available, hands it over, and ends.
    // In collector mode the collector stops fetching: the writers' channels close first, so a
    // collector blocked on a full one returns (what it still held is not acknowledged and
    // comes again); its session stays for the last acknowledgements (collector_.reset()).
    if (collector_) {
        collector_->request_stop();
        for (auto& w : writers_) w->request_finish();
        collector_->stop_fetching();
    }
    for (auto& d : drains_) d->request_stop();
    for (auto& d : drains_) d->stop();
    // 4. Final commits: writers commit what they hold and stop — all at once, so that their
    // retries of failed batches at shutdown (up to 0.5 s each) overlap.
    for (auto& w : writers_) w->request_finish();
    for (auto& w : writers_) w->finish();
    // 5–6. The sequence state was committed with every batch; synthetic.shutdown reports the
    // highest persisted sequence per CPU of this boot, written to shard 0 (or the lowest
    // shard that takes it).
    std::map<uint16_t, uint64_t> highest;
    for (auto& w : writers_)
        for (const auto& [key, ranges] : w->committed_state())
            if (key.boot_id == boot_id_) highest[key.cpu_id] = std::max(highest[key.cpu_id], ranges.highest());
    std::vector<synthetic::CpuSequence> last;
    for (auto& d : drains_) last.push_back({static_cast<uint16_t>(d->cpu()), highest[static_cast<uint16_t>(d->cpu())]});
    const store::EventRow record = synthetic::shutdown(boot_id_, last);
    for (auto& w : writers_) {
        const bool written = w->exclusive([&](store::ShardDb& db) {
            base::Status s = db.begin();
            if (s) s = db.insert(record);
            if (s)
                s = db.commit();
            else
                db.rollback();
            return s.ok();
        });
        if (written) break;
        spdlog::warn("shard {} could not take the shutdown record", w->index());
    }
    // 7–8. Close connections, unmap rings (destructors).
    desired_set_.set_on_publish(nullptr);
    drains_.clear();
    close_shards_side_by_side(writers_);
    collector_.reset();  // flushes the last acknowledgements, then closes its NATS session
    server_.reset();
    spdlog::info("eventd stopped");
}

std::string Daemon::status_line() const {
    uint64_t events = 0, lost = 0;
    for (const auto& d : drains_) {
        events += d->stats().events.load();
        lost += d->stats().lost_events.load();
    }
    if (collector_) return "collected " + std::to_string(collector_->received()) + " records";
    return "ingested " + std::to_string(events) + " events, " + std::to_string(lost) + " lost (gaps)";
}

void Daemon::dump_diagnostics() const {
    spdlog::info("diagnostics: boot {} ({})", base::guid_text(boot_id_), restart_ ? "restart" : "new boot");
    for (const auto& d : drains_) {
        const DrainStats& s = d->stats();
        spdlog::info("  cpu {}: events {}, skipped {}, gaps {} ({} lost), last sequence {}, resumed after {}", d->cpu(),
                     s.events.load(), s.skipped.load(), s.gaps.load(), s.lost_events.load(), s.last_sequence.load(),
                     d->resume_point());
    }
    for (const auto& w : writers_) {
        const WriterStats& s = w->stats();
        spdlog::info("  shard {}: rows {}, batches {}, failed batches {} ({} events lost), queued {}", w->index(),
                     s.rows.load(), s.batches.load(), s.failed_batches.load(), s.lost_events.load(),
                     const_cast<ShardWriter&>(*w).handoff().size());
    }
}

}  // namespace eventd
