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
#include "seal/checkpoint.hpp"

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
}

void Daemon::shutdown(bool dump) {
    if (shut_down_) return;
    shut_down_ = true;
    if (dump) dump_diagnostics();
    // 1. Stop accepting queries and end the running ones — streams get "eventd is shutting
    // down" — before anything else stops (the server object stays until the writers are gone:
    // their on_commit hook still reaches it).
    stopping_.store(true);
    if (server_) server_->stop();
    if (query_fd_ >= 0) close(query_fd_);  // startup failed before the server took it
    query_fd_ = -1;
    if (query_socket_bound_) unlink(config_.query_socket_path.c_str());
    if (retention_) retention_->stop();
    // 2. The policy thread saves the query counters a last time (no query counts any more).
    if (index_policy_) index_policy_->stop();
    // 3. The source hands nothing more over: KMES drains every ring to its end (the final
    // drain); the collector stops fetching.
    if (source_) source_->stop();
    // Detection posts no more alerts; those not committed yet are evaluated again next run.
    if (auto* d = detector_in_use_.load(std::memory_order_acquire)) d->stop();
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
    if (source_)
        for (uint16_t cpu : source_->cpus()) last.push_back({cpu, highest[cpu]});
    const store::EventRow record = synthetic::shutdown(boot_id_, last);
    bool recorded = false;
    for (auto& w : writers_) {
        // Issue 28: each shard's last transaction ends with its final checkpoint, so a stopped
        // store is sealed to its last row (the shutdown record included).
        const bool written = w->exclusive([&](store::ShardDb& db) {
            base::Status s = db.begin();
            const bool take = !recorded;
            if (s && take) s = db.insert(record);
            if (seal::Sealer* sealer = sealer_in_use_.load(std::memory_order_acquire); s && sealer) {
                const uint32_t interval = settings_.checkpoint_interval_s.load();
                if (auto sealed = seal::seal_shard(db, *sealer, boot_id_, synthetic::now_ns(), interval, true); !sealed)
                    spdlog::error("shard {}: cannot seal at shutdown: {}", db.index(), sealed.error().message);
            }
            if (s)
                s = db.commit();
            else
                db.rollback();
            return take && s.ok();
        });
        if (written) recorded = true;
        if (!written && !recorded) spdlog::warn("shard {} could not take the shutdown record", w->index());
    }
    // 7–8. Close connections, unmap rings (destructors). The source goes after the writers:
    // the collector acknowledges what their final commits settled, then closes its session.
    desired_set_.set_on_publish(nullptr);
    close_shards_side_by_side(writers_);
    source_.reset();
    server_.reset();
    spdlog::info("eventd stopped");
}

std::string Daemon::status_line() const { return ready_.load() ? source_->status_line() : "starting"; }

void Daemon::dump_diagnostics() const {
    if (!ready_.load()) return;
    spdlog::info("diagnostics: boot {} ({})", base::guid_text(boot_id_), source_->restart() ? "restart" : "new boot");
    source_->dump_diagnostics();
    for (const auto& w : writers_) {
        const WriterStats& s = w->stats();
        spdlog::info("  shard {}: rows {}, batches {}, failed batches {} ({} events lost), queued {}", w->index(),
                     s.rows.load(), s.batches.load(), s.failed_batches.load(), s.lost_events.load(),
                     const_cast<ShardWriter&>(*w).handoff().size());
    }
}

}  // namespace eventd
