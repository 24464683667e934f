// eventd while running: configuration reload (tuning keys, query limits, the access policy),
// daemon-wide records, storage-error handling.

#include <sys/eventfd.h>

#include <spdlog/spdlog.h>

#include "daemon.hpp"
#include "eventd/ingest/synthetic.hpp"

namespace eventd {

void apply_writer_settings(const EventdConfig& config, WriterSettings& settings) {
    settings.max_batch_size.store(config.max_batch_size);
    settings.max_batch_latency_ms.store(config.max_batch_latency_ms);
    settings.commit_delay_ms.store(config.commit_delay_ms);
    settings.checkpoint_interval_s.store(config.checkpoint_interval_seconds);
    settings.shedding_window_seconds.store(config.shedding_window_seconds);
    settings.shedding_batch_percent.store(config.shedding_batch_percent);
    settings.emergency_shedding_buffer_percent.store(config.emergency_shedding_buffer_percent);
}

void Daemon::post_daemon_record(store::EventRow row, uint32_t avoid_shard) {
    // §2.6.3: shard 0, or the lowest shard that can take it; never the shard a storage
    // error describes.
    for (auto& w : writers_) {
        if (w->index() == avoid_shard) continue;
        w->post(HandoffItem{std::move(row), std::nullopt});
        return;
    }
    spdlog::warn("no other shard can take the {} record; it is only logged", row.event_type);
}

void Daemon::fail(const std::string& why) {
    // failure_ is set before failed_ is published, so main never sees failed() without a reason.
    {
        std::lock_guard lock(failure_mutex_);
        if (!failure_.empty()) return;  // the first failure is the one reported
        failure_ = why;
    }
    failed_.store(true);
    if (failure_fd_ >= 0) eventfd_write(failure_fd_, 1);  // wakes main's poll (seq_cst store before)
    spdlog::critical("{}", why);
}

void Daemon::source_hung_up() {
    if (!ready_.load()) return;  // source_ is being started
    source_->hung_up();
}

void Daemon::on_storage_error(uint32_t shard, const std::string& error) {
    post_daemon_record(synthetic::storage_error(boot_id_, shard, error), shard);
    if (retention_) retention_->request();  // §11.1: free space as soon as possible
}

// Issue 28: sealed while the store has a sealing key. A key that cannot be used leaves the
// store unsealed rather than eventd stopped: events are never lost for it, and both cases are
// said at every start (docs/OPERATIONS.md "Sealing the store"). A key set up while eventd runs
// is taken at the next reload.
void Daemon::try_sealing(bool at_startup) {
    if (sealer_in_use_.load(std::memory_order_acquire)) return;
    auto sealer = seal::Sealer::load(config_.event_store_path);
    std::string problem;
    if (!sealer) {
        problem = sealer.error().message;
        spdlog::error("the store will not be sealed: {}", problem);
    } else if (!*sealer) {
        problem = "no sealing key (eventctl seal --setup)";
        if (at_startup)
            spdlog::warn("the store in {} is not sealed: nothing can prove later that its events were not changed; "
                         "run `eventctl seal --setup --store {}` and reload eventd",
                         config_.event_store_path, config_.event_store_path);
    } else {
        sealer_ = std::move(*sealer);
        spdlog::info("sealing the store: a signed checkpoint per shard every {} s, keys of epoch {} ({} s each)",
                     config_.checkpoint_interval_seconds, sealer_->current_epoch(), sealer_->schedule().epoch_seconds);
        sealer_in_use_.store(sealer_.get(), std::memory_order_release);
        for (auto& w : writers_) w->enable_sealing(*sealer_);
    }
    std::lock_guard lock(sealing_mutex_);
    sealing_problem_ = problem;
}

void Daemon::reload(const std::string& config_path) {
    std::lock_guard lock(config_mutex_);
    try_sealing(false);
    auto loaded = load_eventd_config(config_path, config_);
    if (!loaded) {
        spdlog::error("configuration not reloaded, values in force kept: {}", loaded.error().message);
        return;
    }
    for (const ConfigProblem& p : loaded->problems) spdlog::warn("configuration key {}: {}", p.key, p.message);
    std::vector<std::string> restart_only;
    const auto changes = tuning_changes(LoadedConfig{config_, {}, present_}, *loaded, &restart_only);
    present_ = loaded->present;
    for (const std::string& key : restart_only)
        spdlog::warn("configuration key {} changed; it applies at the next start", key);
    // Everything applies at once except the restart-only keys (§12.1), which keep their values
    // in force (tuning_changes reported them above).
    EventdConfig next = loaded->config;
    next.event_store_path = config_.event_store_path;
    next.query_socket_path = config_.query_socket_path;
    next.kmes_socket_path = config_.kmes_socket_path;
    next.storage_shards = config_.storage_shards;
    config_ = next;
    apply_writer_settings(next, settings_);
    // §12.1: the query timeout and limits apply to new connections at once; SIGHUP reloads
    // the policy and invalidates caches — new queries use it at once, running streams from
    // their next batch (§9.2).
    if (server_) {
        server_->set_limits(query_limits(next));
        policy_->set(load_policy(next.security));
        server_->policy_changed();
    }
    // Adaptive indexing: new thresholds, window and interval from the next pass; SIGHUP also
    // re-reads admin_sd from eventd-meta.db (docs/OPERATIONS.md).
    if (index_policy_) {
        index_policy_->configure(index_policy_settings(next));
        index_policy_->reload_admin_sd();
    }
    bool retention_changed = false;
    for (const ConfigChange& c : changes) {
        spdlog::info("configuration key {} changed from {} to {}", c.key, c.old_value.dump(), c.new_value.dump());
        post_daemon_record(synthetic::config_change(boot_id_, c.key, c.old_value, c.new_value));
        retention_changed |= c.key.rfind("EventRetention", 0) == 0 || c.key == "RetentionCheckIntervalMinutes";
    }
    // A new limit applies now rather than at the next interval.
    if (retention_) retention_->set_limits(retention_limits(next), retention_changed);
    // The rule files are read again (their directory is restart-only): from the next event on;
    // the first rules start the detector.
    if (base::Status s = apply_detection_rules(); !s) spdlog::error("detection not started: {}", s.error().message);
}

}  // namespace eventd
