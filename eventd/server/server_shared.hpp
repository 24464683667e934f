// What every session of the query server shares with it: the store, the policy and its
// generation, the stop flag, the commit signal streams wait on, the cursor key, counters and
// admissions, the daemon's STATUS records and the index hooks.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.hpp"
#include "eventd/access/caller.hpp"
#include "eventd/access/policy.hpp"
#include "eventd/server/admissions.hpp"
#include "eventd/server/caller_log.hpp"
#include "eventd/server/commit_signal.hpp"
#include "store/cursor_key.hpp"

namespace eventd::server {

// Adaptive indexing as the sessions see it (PSD-008 §8.6.5, §8.2.7); the daemon wires them to
// eventd/index/. Either may be empty (a server without a daemon, in tests).
struct IndexHooks {
    // Every EVENTS query its caller may run over types it can read (issue 23: nothing counted
    // for types the caller cannot see, nor for fields it may not use): count the fields it
    // filters on, within the caller's budget (eventd/index/field_counter.hpp).
    std::function<void(const query::Query&, const access::Caller&, bool admin)> count;
    // EVENTS INDEX: authorise `caller` against admin_sd, add `field`, return once persisted.
    std::function<base::Status(const access::Caller& caller, const std::string& field,
                               std::chrono::steady_clock::time_point deadline)>
        add;
};

// State every session shares with the server.
struct ServerShared {
    std::filesystem::path store_dir;
    access::PolicyHolder* policy = nullptr;
    std::atomic<uint64_t> policy_generation{0};  // bumped on reload: streams reset their access
    std::atomic<bool> stopping{false};           // shutdown: the executor's cancel flag
    std::unique_ptr<CommitSignal> signal;
    // Seals every cursor the server issues and opens those clients bring (store/cursor_key.hpp).
    std::optional<store::CursorKey> cursor_key;
    QueryCounters counters;
    Admissions admissions;
    // The daemon's STATUS records (rings, shards, rates); the server adds {kind:"queries"}.
    std::function<std::vector<nlohmann::json>()> daemon_status;
    // VERIFY (issue 28): seal every shard now, then verify the store with the given key; one
    // record per file (daemon_status.cpp). Null: not available.
    std::function<base::Result<std::vector<nlohmann::json>>(const std::string& key)> verify_store;
    IndexHooks index;
    CallerLog caller_log;  // what callers trigger, logged within a budget per uid

    ServerLimits limits() const {
        std::lock_guard lock(limits_mutex);
        return limits_;
    }
    void set_limits(const ServerLimits& l) {
        std::lock_guard lock(limits_mutex);
        limits_ = l;
    }
    nlohmann::json queries_record() const;

private:
    mutable std::mutex limits_mutex;
    ServerLimits limits_;
};

}  // namespace eventd::server
