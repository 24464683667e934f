// The eventd daemon object (DESIGN.md §4). Split by concern: daemon_startup.cpp (§10.1
// phases), daemon_shutdown.cpp (§10.2), daemon_runtime.cpp (reload, retention),
// daemon_status.cpp (STATUS records). Queries: server/query_server.hpp.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <set>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "config.hpp"
#include "protocol/status.hpp"
#include "eventd/common/lock_order.hpp"
#include "eventd/access/policy.hpp"
#include "eventd/index/desired_set.hpp"
#include "eventd/index/field_counter.hpp"
#include "eventd/index/policy_thread.hpp"
#include "eventd/server/query_server.hpp"
#include "eventd/detect/detector.hpp"
#include "eventd/ingest/shard_writer.hpp"
#include "eventd/ingest/source.hpp"
#include "eventd/retention/retention_thread.hpp"
#include "store/sequence_ranges.hpp"

namespace eventd {

// The query keys of the configuration as the query server's limits.
server::ServerLimits query_limits(const EventdConfig& config);
// The access policy of the `Security` key; an invalid one is logged and replaced by
// Policy::refused() (fail closed: only root reads; STATUS says why).
std::shared_ptr<const access::Policy> load_policy(const nlohmann::json& security);
// The tuning keys the shard writers and drain threads read (batching, shedding), at once.
void apply_writer_settings(const EventdConfig& config, WriterSettings& settings);
// The adaptive-index keys of the configuration as the policy thread's settings (the test-only
// EVENTD_TEST_INDEX_* overrides of test_hooks.hpp applied).
index::PolicySettings index_policy_settings(const EventdConfig& config);
// The retention keys of the configuration.
RetentionLimits retention_limits(const EventdConfig& config);
// The rules of DetectionRulesPath, each refused one logged with its reason (daemon_startup.cpp).
detect::RuleSet load_detection_rules(const std::string& dir);

class Daemon {
public:
    // Phases 1–7 of §10.1 except readiness, which main signals, over the source the
    // configuration names (KMES rings, or a JetStream stream with CollectorSource). Any
    // failure: an Error, no threads left.
    static base::Result<std::unique_ptr<Daemon>> start(const LoadedConfig& loaded);
    ~Daemon();

    // §10.2 graceful shutdown. With dump (SIGQUIT) a diagnostic dump goes to stderr first.
    void shutdown(bool dump);
    // Runtime configuration change (SIGHUP, file change): tuning keys at once, each recorded
    // as synthetic.config_change; restart-only keys logged.
    void reload(const std::string& config_path);
    // A thread cannot go on (a lost KMES ring, an exception): main exits non-zero.
    bool failed() const { return failed_.load(); }
    // Readable once failed() is true: main sleeps in poll() instead of checking failed() on a
    // timer (an idle eventd should not wake for nothing).
    int failure_fd() const { return failure_fd_; }
    // Source::watch_fd: main polls it for a hang-up (a SIGKILLed kmes-shimd retires no ring,
    // so this is how idle drains learn of it promptly) and then calls source_hung_up() (every
    // tick, until failed()). -1 if none.
    int source_watch_fd() const { return source_ ? source_->watch_fd() : -1; }
    void source_hung_up();
    std::string failure() const {
        std::lock_guard lock(failure_mutex_);
        return failure_;
    }
    std::string status_line() const;
    void dump_diagnostics() const;
    // Called about every 200 ms by main: samples the event counters for the rates in STATUS.
    void tick();
    // The watchdog's question (issue 40), asked by main before each WATCHDOG=1: what has made
    // no progress for `limit` although it had work — a shard writer whose loop stands still
    // while it is not waiting for work (a commit that never returns), or the query server's
    // thread, which accepts every connection, not running a probe. nullopt: healthy.
    std::optional<std::string> stalled(std::chrono::steady_clock::duration limit);
    // STATUS records (daemon_status.cpp): daemon, ring per CPU, shard per writer, rates. The
    // query server adds its own {kind:"queries"}. Runs on a query worker thread.
    std::vector<nlohmann::json> status_records() const;
    protocol::status::Sealing sealing_status() const;
    // VERIFY (daemon_verify.cpp): seal every shard, verify the store, one record per file.
    base::Result<std::vector<nlohmann::json>> verify_records(const std::string& key);

    // The global desired index set (PSD-008 §3.3.2): published by the policy thread (the
    // persisted set is in it before any writer starts), read by the shard writers.
    const index::DesiredSetHolder& desired_set() const { return desired_set_; }

private:
    explicit Daemon(const LoadedConfig& loaded);

    // daemon_startup.cpp
    base::Status open_shards(uint32_t count);
    base::Status open_query_socket();
    base::Status start_query_server();
    void start_retention();

    // daemon_runtime.cpp
    void post_daemon_record(store::EventRow row, uint32_t avoid_shard = UINT32_MAX);
    void on_storage_error(uint32_t shard, const std::string& error);
    // A thread cannot go on (lost ring, unexpected exception): main exits non-zero. First one wins.
    void fail(const std::string& why);

    EventdConfig config_;            // values in force
    std::set<std::string> present_;  // keys the configuration file set (for config_change)
    // Lock order (lock_order.hpp): config_mutex_ (config, 10) → RetentionThread's (retention, 20)
    // → a writer's urgent_mutex_ (urgent, 40); reload() holds it while it posts records and
    // sets retention limits. Never held while a shard's db_mutex_ is taken.
    RankedMutex config_mutex_{LockRank::config};
    WriterSettings settings_;
    kmes::Guid boot_id_{};  // Source::run_id: keys the daemon's own records
    std::string os_boot_id_;
    store::SequenceState accounted_;  // union of every shard's sequence_state at startup

    // Adaptive indexing, policy half (eventd/index/): query handlers bump field_counter_, the
    // policy thread turns the counts into desired_set_ and eventd-meta.db. Declared before
    // server_ and writers_, so both are destroyed before these.
    index::DesiredSetHolder desired_set_;
    index::FieldCounter field_counter_;
    std::unique_ptr<index::PolicyThread> index_policy_;

    // The store's sealing key (issue 28), null when it has none. Declared before writers_: they
    // sign with it until they are destroyed.
    // Written by startup and reload only (under config_mutex_ at runtime), never reset while
    // writers run; other threads (STATUS, VERIFY) read sealer_in_use_ (release/acquire: the
    // Sealer is complete before it is published).
    std::unique_ptr<seal::Sealer> sealer_;
    std::atomic<seal::Sealer*> sealer_in_use_{nullptr};
    mutable std::mutex sealing_mutex_;  // leaf: guards sealing_problem_ only
    std::string sealing_problem_;       // why the store is not sealed (STATUS), when it is not
    // Start sealing when the store has a sealing key now (startup, and every reload while not
    // sealed); `at_startup`: say so when it has none.
    void try_sealing(bool at_startup);
    // Sigma rules on the audit events (issue 41): started once there are rules (at start or at
    // a reload), never destroyed before the writers — declared before writers_: alerts it
    // posted settle into it until they are gone; its thread stops first. Owned by detector_,
    // written under config_mutex_ (startup, reload); the writers' commit hook reads
    // detector_in_use_ (release on publishing a started detector / acquire in the hook).
    std::unique_ptr<detect::Detector> detector_;
    std::atomic<detect::Detector*> detector_in_use_{nullptr};
    // Reads DetectionRulesPath and gives the rules to the detector, starting it when there
    // are rules and none runs yet. Not in collector mode.
    base::Status apply_detection_rules();
    std::vector<std::unique_ptr<ShardWriter>> writers_;
    // Stops handing records over before the writers finish and is destroyed after them: what
    // their last commits settle still reaches it (shutdown()).
    std::unique_ptr<Source> source_;
    // storage_error records from opening shards, with the shard they describe
    std::vector<std::pair<uint32_t, store::EventRow>> startup_errors_;

    int query_fd_ = -1;                // until the query server takes it over
    bool query_socket_bound_ = false;  // ours to unlink at shutdown
    std::unique_ptr<access::PolicyHolder> policy_;
    std::unique_ptr<server::QueryServer> server_;  // lives until the writers are gone (on_commit)
    struct WriterProgress {  // stalled(), main thread only
        uint64_t turns = 0;
        std::chrono::steady_clock::time_point since{};
    };
    std::vector<WriterProgress> writer_progress_;
    // Rates for STATUS: (time, events drained, rows committed) samples of the last ~10 s.
    struct RateSample {
        std::chrono::steady_clock::time_point at;
        uint64_t in = 0;
        uint64_t out = 0;
    };
    mutable std::mutex rates_mutex_;
    std::deque<RateSample> rate_samples_;
    std::chrono::system_clock::time_point started_at_ = std::chrono::system_clock::now();
    std::unique_ptr<RetentionThread> retention_;
    std::atomic<bool> stopping_{false};
    std::atomic<bool> ready_{false};  // start() finished: source_ and writers_ are complete
    std::atomic<bool> failed_{false};
    int failure_fd_ = -1;  // eventfd, written by fail() after failed_ is set
    mutable std::mutex failure_mutex_;  // failure_: written by the failing thread, read by main (leaf)
    std::string failure_;
    bool shut_down_ = false;
};

}  // namespace eventd
