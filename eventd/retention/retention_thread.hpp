// Retention as eventd runs it (PSD-008 §3.4): a thread that brings the store within
// EventRetentionDays and EventRetentionMaxBytes every RetentionCheckIntervalMinutes, at once
// at startup (a store may have gone past its limits while eventd was down), and whenever
// asked — a failed commit (§11.1: free space as soon as possible) or changed limits. The
// algorithm is store::run_retention; each delete batch runs under a shard writer's lock,
// between its transactions (the RetentionShards the daemon wires to its writers).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "eventd/common/lock_order.hpp"
#include "store/retention.hpp"

namespace eventd {

struct RetentionLimits {
    uint64_t days = 0;       // EventRetentionDays (0: no age limit)
    uint64_t max_bytes = 0;  // EventRetentionMaxBytes (0: no size limit)
    uint32_t interval_minutes = 60;
};

class RetentionThread {
public:
    // `shards` outlive the thread (stop()). A pass that throws is given up and the next
    // interval tries again; `on_fatal` is for the thread itself ending on an exception (a
    // store without retention fills its disk: eventd fails and restarts).
    RetentionThread(store::RetentionShards shards, RetentionLimits limits,
                    std::function<void(const std::string& why)> on_fatal);
    ~RetentionThread();  // stop()
    RetentionThread(const RetentionThread&) = delete;
    RetentionThread& operator=(const RetentionThread&) = delete;

    void start();
    // New limits (reload): they apply from the next pass; `run_now` starts that pass at once.
    void set_limits(RetentionLimits limits, bool run_now);
    // A pass now (a commit failed: space is needed).
    void request();
    // Ends a running pass before its next batch and joins the thread.
    void stop();
    // STATUS {kind:"retention"}: passes finished, rows they deleted, when the last one ended.
    nlohmann::json status_record() const;

private:
    void loop();
    void run_pass(const RetentionLimits& limits);

    const store::RetentionShards shards_;
    std::function<void(const std::string&)> on_fatal_;
    std::thread thread_;
    std::atomic<bool> stopping_{false};  // also read by a running pass (should_stop)
    // mutex_ (rank retention, 20) guards limits_ and requested_. Taken by reload() under the
    // daemon's config_mutex_ (10) and by writer threads holding none of theirs; released
    // before a pass runs, so never held together with a shard's db_mutex_.
    RankedMutex mutex_{LockRank::retention};
    std::condition_variable_any wake_;
    RetentionLimits limits_;
    // True at start: the first pass runs at once rather than a whole interval later.
    bool requested_ = true;
    // Written by the thread only; relaxed (statistics, nothing is published with them).
    std::atomic<uint64_t> runs_{0};
    std::atomic<uint64_t> deleted_{0};
    std::atomic<uint64_t> last_run_ns_{0};
};

}  // namespace eventd
