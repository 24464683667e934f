// eventd startup (PSD-008 §10.1, DESIGN.md §4.1), one sequence for either source. Phase
// order: configuration (main) → storage (store directory, index policy) → the source (KMES:
// boot boundary and ring attach; collector: a run id) → shards (their count needs the CPU
// count when StorageShards is 0) and their sequence state → query socket → threads →
// synthetic.startup. main signals READY=1 after start() succeeds.
#include <sys/socket.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>

#include <spdlog/spdlog.h>

#include "base/guid_text.hpp"
#include "daemon.hpp"
#include "base/display_escape.hpp"
#include "eventd/collector/collector_source.hpp"
#include "eventd/ingest/kmes_source.hpp"
#include "kmes/guid.hpp"
#include "base/unix_listener.hpp"
#include "store/store_identity.hpp"
#include "store/store_privacy.hpp"
#include "eventd/index/where_fields.hpp"
#include "eventd/ingest/synthetic.hpp"
#include "test_hooks.hpp"
#include "base/thread_boundary.hpp"

namespace eventd {

using base::Error;
using base::Result;
using base::Status;

Daemon::Daemon(const LoadedConfig& loaded)
    : config_(loaded.config), present_(loaded.present), failure_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    apply_writer_settings(config_, settings_);
}

Result<std::unique_ptr<Daemon>> Daemon::start(const LoadedConfig& loaded) {
    std::unique_ptr<Daemon> d(new Daemon(loaded));
    const EventdConfig& config = d->config_;

    // Phase 2: the store directory and the persisted per-boot sequence state of every shard
    // file (active, historical, quarantined) — never a scan of `events`.
    // The store is private (store_privacy.hpp): an existing one readable by others is tightened.
    auto tightened = store::make_store_private(config.event_store_path);
    if (!tightened) return tightened.error();
    for (const std::string& change : *tightened)
        spdlog::warn("store file was accessible to other users, made private: {}", change);
    // The store's identity, which stream cursors name (store_identity.hpp).
    if (auto id = store::load_or_create_store_id(config.event_store_path); !id) return id.error();
    // §3.3.9: eventd-meta.db opened (or recreated) and the persisted desired set published
    // before any writer exists; an unusable one never stops eventd (policy_thread.hpp).
    d->index_policy_ = index::PolicyThread::open(
        index::PolicyThread::Options{config.event_store_path, &d->desired_set_, &d->field_counter_,
                                     index_policy_settings(config), synthetic::now_ns});

    // Phases 3–4: the source — the KMES boot boundary and every CPU's ring, or the collector's
    // stream (Source, ingest/source.hpp).
    Daemon* raw = d.get();
    auto on_fatal = [raw](const std::string& why) { raw->fail(why); };
    if (config.collector)
        d->source_ = std::make_unique<collector::CollectorSource>(*config.collector, on_fatal);
    else
        d->source_ = std::make_unique<KmesSource>(config.kmes_socket_path, on_fatal);
    if (Status s = d->source_->open(); !s) return s.error();
    d->boot_id_ = d->source_->run_id();
    std::ifstream os_boot("/proc/sys/kernel/random/boot_id");
    std::getline(os_boot, d->os_boot_id_);

    // The shards (their count needs the CPU count when StorageShards is 0) and what every
    // shard file accounts for.
    const uint32_t shard_count =
        config.storage_shards == 0 ? d->source_->default_shard_count() : config.storage_shards;
    if (Status s = d->open_shards(shard_count); !s) return s.error();
    d->try_sealing(true);
    std::vector<std::string> unreadable;
    d->accounted_ = store::load_sequence_state(config.event_store_path, &unreadable);
    for (const std::string& f : unreadable) spdlog::warn("sequence state of {} could not be read", f);

    // Phase 5: the query socket and its server (accepting from here on; queries read the
    // store through their own read-only connections).
    if (Status s = d->open_query_socket(); !s) return s.error();
    if (Status s = d->start_query_server(); !s) return s.error();
    // Before the writers start: their commits reach it from the first (detector.hpp).
    if (Status s = d->apply_detection_rules(); !s) return s.error();

    // Phase 6: threads — writers first, so the source always has somewhere to hand records.
    for (auto& w : d->writers_) w->start();
    // Idle writers sleep until woken (ShardWriter::idle_wait): a new desired index set wakes
    // them. writers_ is complete now and stays so until shutdown, after the policy thread.
    d->desired_set_.set_on_publish([raw] {
        for (auto& w : raw->writers_) w->desired_set_changed();
    });
    std::vector<ShardWriter*> writers;
    for (auto& w : d->writers_) writers.push_back(w.get());
    if (Status s = d->source_->start(writers, d->accounted_); !s) return s.error();
    d->index_policy_->start();
    d->start_retention();

    // Phase 7: synthetic.startup. It also marks the boot as started (sequence 0 of CPU 0,
    // which KMES never assigns), so a restart without any event is still known as one.
    HandoffItem startup{synthetic::startup(d->boot_id_, d->os_boot_id_, d->source_->restart(), shard_count,
                                           d->source_->resume_points()),
                        Accounting{0, 0, 0}};
    d->writers_.front()->post(std::move(startup));
    for (auto& [shard, record] : d->startup_errors_) d->post_daemon_record(std::move(record), shard);
    d->startup_errors_.clear();
    d->ready_.store(true);
    return d;
}

// §3.4: retention deletes through the writers — each batch under a writer's lock, between
// its transactions (ShardWriter::exclusive).
void Daemon::start_retention() {
    const store::RetentionShards shards{
        static_cast<uint32_t>(writers_.size()),
        [this](uint32_t i, const std::function<void(store::ShardDb&)>& f) { writers_[i]->exclusive(f); }};
    retention_ = std::make_unique<RetentionThread>(shards, retention_limits(config_),
                                                   [this](const std::string& why) { fail(why); });
    retention_->start();
}

Status Daemon::open_shards(uint32_t count) {
    for (uint32_t index = 0; index < count; ++index) {
        auto db = store::ShardDb::open(config_.event_store_path, index);
        if (!db && db.error().code != base::ErrorCode::protocol) {
            // A full disk, an I/O error, no memory or file descriptors: nothing is wrong with the
            // file, so it is not set aside — §11.1 takes a shard out of the write path only when
            // it fails the structural check ("SQLite corruption"), and a full disk is "Disk full".
            // eventd does not start; its restart tries again (§10.2: no manual recovery).
            return Error{db.error().code, "shard " + std::to_string(index) + " cannot be opened now (" +
                                              db.error().message +
                                              "); it is not set aside: nothing says it is damaged"};
        }
        if (!db) {
            // DESIGN.md §8: a damaged or unknown file (ErrorCode::protocol) is never written
            // again and never deleted; a fresh file takes its place.
            const std::string error = db.error().message;
            auto moved = store::quarantine_shard(config_.event_store_path, index);
            if (!moved)
                return Error{moved.error().code, "shard " + std::to_string(index) + " is unusable (" + error +
                                                     ") and could not be set aside: " + moved.error().message};
            spdlog::error("shard {} excluded from writes: {}; kept as {}", index, error, *moved);
            startup_errors_.emplace_back(index,
                                         synthetic::storage_error(boot_id_, index, error + "; kept as " + *moved));
            db = store::ShardDb::open(config_.event_store_path, index);
            if (!db)
                return Error{db.error().code,
                             "cannot create shard " + std::to_string(index) + ": " + db.error().message};
        }
        Daemon* raw = this;
        writers_.push_back(std::make_unique<ShardWriter>(
            std::move(*db), boot_id_, settings_,
            WriterHooks{[raw](uint32_t shard, const std::string& e) { raw->on_storage_error(shard, e); },
                        // §8.7.3: wake live streams. The server exists before any writer
                        // thread starts and outlives them all.
                        [raw](uint32_t shard) {
                            if (raw->server_) raw->server_->on_commit(shard);
                            if (auto* d = raw->detector_in_use_.load(std::memory_order_acquire)) d->on_commit(shard);
                        },
                        [raw](const std::string& why) { raw->fail(why); }},
            &desired_set_));
    }
    return {};
}

Status Daemon::open_query_socket() {
    // §10.1 step 15: a stale socket of an earlier run is replaced; the socket accepts any local
    // user, authorisation is per query (§9).
    auto fd = base::listen_unix_socket(
        config_.query_socket_path,
        {.type = SOCK_STREAM, .backlog = 64, .setting = "QuerySocketPath", .daemon = "eventd"});
    if (!fd) return fd.error();
    query_fd_ = *fd;
    query_socket_bound_ = true;
    return {};
}

server::ServerLimits query_limits(const EventdConfig& c) {
    server::ServerLimits l;
    l.query_timeout_ms = c.query_timeout_ms;
    l.max_concurrent_queries = c.max_concurrent_queries;
    l.max_streaming_queries = c.max_streaming_queries;
    l.max_queries_per_user = c.max_queries_per_user;
    l.max_streaming_queries_per_user = c.max_streaming_queries_per_user;
    l.admin_reserved_queries = c.admin_reserved_queries;
    l.user_query_nice = c.user_query_nice;
    l.max_running_queries_per_user = c.max_running_queries_per_user;
    l.max_query_group_bytes = c.max_query_group_bytes;
    l.max_query_message_bytes = c.max_query_message_bytes;
    l.query_response_target_bytes = c.query_response_target_bytes;
    return l;
}

std::shared_ptr<const access::Policy> load_policy(const nlohmann::json& security) {
    auto policy = access::Policy::parse(security);
    if (policy) {
        // Unknown user/group names and a missing "*" pattern are not errors, but they change
        // who sees what: say so every time the policy is (re)loaded.
        for (const std::string& warning : (*policy)->warnings()) spdlog::warn("Security policy: {}", warning);
        return *policy;
    }
    // DESIGN.md §3: fail closed — nobody but root reads anything until the policy is fixed.
    spdlog::error("Security policy rejected, only root may query until it is fixed: {}", policy.error().message);
    return access::Policy::refused(policy.error().message);
}

RetentionLimits retention_limits(const EventdConfig& c) {
    return {c.event_retention_days, c.event_retention_max_bytes, c.retention_check_interval_minutes};
}

index::PolicySettings index_policy_settings(const EventdConfig& c) {
    index::PolicySettings s;
    s.params.create_threshold = c.adaptive_index_create_threshold;
    s.params.drop_threshold = c.adaptive_index_drop_threshold;
    s.params.window_ns = int64_t(c.adaptive_index_window_hours) * 3600 * 1'000'000'000;
    s.interval = std::chrono::minutes(c.adaptive_index_policy_interval_minutes);
    if (const auto window = test_index_window()) s.params.window_ns = int64_t(window->count()) * 1'000'000;
    if (const auto interval = test_index_policy_interval()) s.interval = *interval;
    return s;
}

Status Daemon::start_query_server() {
    policy_ = std::make_unique<access::PolicyHolder>(load_policy(config_.security));
    server::ServerOptions options;
    options.listen_fd = query_fd_;
    options.store_dir = config_.event_store_path;
    options.shard_count = static_cast<uint32_t>(writers_.size());
    options.limits = query_limits(config_);
    options.policy = policy_.get();
    options.daemon_status = [this] { return status_records(); };
    options.verify_store = [this](const std::string& key) { return verify_records(key); };
    // §8.6.5 accounting and §8.2.7 INDEX; both objects outlive the server (daemon.hpp).
    options.index.count = [counter = &field_counter_](const query::Query& q, const access::Caller& caller, bool admin) {
        counter->count(index::where_fields(q), index::Contributor{caller.uid, admin});
    };
    options.index.add = [policy = index_policy_.get()](const access::Caller& caller, const std::string& field,
                                                       std::chrono::steady_clock::time_point deadline) {
        return policy->index(caller, field, deadline);
    };
    auto server = server::QueryServer::start(std::move(options));
    if (!server) return server.error();
    query_fd_ = -1;  // the server owns and closes it
    server_ = std::move(*server);
    return {};
}

detect::RuleSet load_detection_rules(const std::string& dir) {
    detect::RuleSet rules = detect::load_rules(dir);
    for (const detect::RefusedRule& r : rules.refused)
        spdlog::error("detection rule {} refused (the others load): {}", base::display_escaped(dir + "/" + r.file),
                      base::display_escaped(r.reason));
    spdlog::info("detection: {} rule(s) in {}, {} refused", rules.rules.size(), base::display_escaped(dir),
                 rules.refused.size());
    return rules;
}

Status Daemon::apply_detection_rules() {
    // Issue 41 (docs/DETECTION.md): the rules of DetectionRulesPath, evaluated on this host's
    // audit events. A collector's store holds other hosts' events, whose own eventd evaluates
    // them (and forwards its alerts). Without rules no detector runs: it would hold a reader of
    // every shard for nothing.
    if (config_.collector) return {};
    detect::RuleSet rules = load_detection_rules(config_.detection_rules_path);
    if (detector_) {
        detector_->set_rules(std::move(rules));
        return {};
    }
    if (rules.rules.empty()) return {};
    detect::Detector::Options options;
    options.store_dir = config_.event_store_path;
    options.shard_count = static_cast<uint32_t>(writers_.size());
    options.rules = std::move(rules);
    Daemon* raw = this;
    options.post = [raw](uint32_t shard, HandoffItem item) { raw->writers_.at(shard)->post(std::move(item)); };
    auto detector = detect::Detector::start(std::move(options));
    if (!detector) return detector.error();
    detector_ = std::move(*detector);
    detector_in_use_.store(detector_.get(), std::memory_order_release);  // pairs with the hook's acquire
    return {};
}

}  // namespace eventd
