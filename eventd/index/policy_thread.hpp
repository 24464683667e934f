// The policy thread (PSD-008 §3.3.2 part 2): the only writer of the desired index set and of
// eventd-meta.db after startup.
//
//   query workers ──count──► FieldCounter ──take()──┐
//   EVENTS INDEX ──request (admin checked)─────────┤      every AdaptiveIndexPolicyIntervalMinutes,
//   reload (SIGHUP) ──settings, re-read admin_sd───┤      or at once for an INDEX request:
//                                                   ▼
//                           policy thread: add counts → roll/admit/order (policy.hpp)
//                             → DesiredSetHolder::publish (when the set changed)
//                             → eventd-meta.db: index_counters + desired_indexes (one txn)
//                             → INDEX requests answered (after the save)
//                                                   │
//   shard writers ◄──current()── DesiredSetHolder ◄─┘
//
// open() runs at startup before any writer starts: it opens (or recreates, meta_db.hpp) the
// database, loads counters and the desired set and publishes the set — nothing is built or
// dropped by this (the writers converge later, in quiet periods). If no usable database can be
// made, the policy runs in memory and tries again every interval (logged; INDEX then fails
// because it cannot be persisted). stop() ends the thread, which saves the counters a last
// time on its way out — after startup no other thread writes the database.
//
// Threading: the thread owns the PolicyState and the database; mutex_ (rank index_policy,
// lock_order.hpp) guards only the hand-over fields below. Every pass runs under run_guarded:
// an unexpected exception gives up that pass (logged), never eventd.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.hpp"
#include "eventd/access/caller.hpp"
#include "eventd/index/admin_sd.hpp"
#include "eventd/index/desired_set.hpp"
#include "eventd/index/field_counter.hpp"
#include "eventd/index/meta_db.hpp"
#include "eventd/index/policy.hpp"
#include "eventd/common/lock_order.hpp"
#include "protocol/status.hpp"

namespace eventd::index {

struct PolicySettings {
    PolicyParams params;
    std::chrono::milliseconds interval{std::chrono::minutes(60)};
};

class PolicyThread {
public:
    struct Options {
        std::filesystem::path store_dir;
        DesiredSetHolder* holder = nullptr;  // outlives the thread
        FieldCounter* counter = nullptr;     // outlives the thread
        PolicySettings settings;
        std::function<int64_t()> now_ns;  // wall clock, ns since the epoch (injectable for tests)
    };

    // Startup: open eventd-meta.db, load it, publish the persisted desired set. No thread yet.
    static std::unique_ptr<PolicyThread> open(Options options);
    ~PolicyThread();
    PolicyThread(const PolicyThread&) = delete;
    PolicyThread& operator=(const PolicyThread&) = delete;

    void start();
    // Persist the counters and end the thread; pending INDEX requests fail (shutting down).
    void stop();

    // Reload: new thresholds, window and interval apply from the next pass; admin_sd is read
    // again from eventd-meta.db (an operator may have changed it with sqlite3).
    void configure(const PolicySettings& settings);
    void reload_admin_sd();

    // EVENTS INDEX <field> (§8.2.7) for `caller`: EACCES unless root or in admin_sd; otherwise
    // the field goes first in the desired set, which is recomputed, published and persisted
    // before this returns. Errors: the deadline passed, shutting down, the save failed.
    base::Status index(const access::Caller& caller, const std::string& field,
                       std::chrono::steady_clock::time_point deadline);

    // eventctl status: {kind:"index_policy"} and one {kind:"index_field"} per counted field
    // (the most queried first, at most kStatusFields).
    std::vector<nlohmann::json> status_records() const;
    static constexpr size_t kStatusFields = 100;

private:
    struct Request {
        std::string field;
        std::promise<base::Status> done;
    };

    explicit PolicyThread(Options options);
    void run();
    void pass(std::vector<Request>& requests, const PolicySettings& settings);
    // Every window length, unprivileged users' counting budgets start over (field_counter.hpp).
    void roll_user_window(const PolicyParams& params, int64_t now_ns);
    void final_save();
    void read_admin_sd();
    // Save counters and set (reopening an unusable database first); logged when it fails.
    base::Status persist();
    // INDEX requests get their answer: ok, or the field is desired but not saved.
    static void answer(std::vector<Request>& requests, const base::Status& saved);
    void publish_status(const PolicySettings& settings);

    Options options_;
    // Owned by the policy thread (and by open()/stop() while no thread runs).
    PolicyState state_;
    std::optional<MetaDb> db_;
    std::string db_problem_;  // why db_ is empty
    int64_t last_pass_ns_ = 0;
    int64_t user_window_start_ns_ = 0;

    // Hand-over, guarded by mutex_ (rank index_policy).
    mutable RankedMutex mutex_{LockRank::index_policy};
    std::condition_variable_any wake_;
    std::vector<Request> requests_;
    PolicySettings settings_;
    bool settings_changed_ = false;
    bool reread_admin_sd_ = false;
    bool stopping_ = false;
    bool running_ = false;
    std::shared_ptr<const AdminSd> admin_sd_;
    protocol::status::IndexPolicy status_;  // as of the last pass, without the live counters

    std::thread thread_;
};

}  // namespace eventd::index
