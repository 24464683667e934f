// Detection where the data is (issue 41; docs/DETECTION.md "Evaluation"): one thread that
// follows the shard writers' commits, reads each shard's new audit events in store order (a
// query's live feed, eventd/query/live_feed.hpp, as root), evaluates every loaded rule on each,
// and hands each match to the event's shard writer as an alert (alert.hpp).
//
// Every committed audit event is evaluated, and each match stored once, across restarts and
// crashes, without a transaction spanning the feed and the writers:
//   - where the detector has read up to (a StorePosition) is persisted in the store directory
//     (`detection.position`, written atomically) only once every alert before it is committed;
//     a crash re-reads from the persisted position, and so evaluates some events again;
//   - an alert is the same row however often its event is evaluated (alert.hpp), and the
//     detector is a redelivering source (eventd/ingest/redelivery.hpp): the writer stores an
//     alert only when no identical row is stored, inside its own transaction.
// The first start (no position yet) evaluates what is committed from then on, not the past.
//
// Threads: on_commit() on writer threads (a flag and a notify); settled() on writer threads
// (outcomes and a notify); everything else on the detector's own thread. `mutex_` guards the
// flags and outcomes; the condition variable pairs each notify with the thread's wait.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.hpp"
#include "eventd/detect/rule_set.hpp"
#include "eventd/ingest/handoff.hpp"
#include "eventd/ingest/redelivery.hpp"

namespace eventd::detect {

class Detector : public RedeliveringSource {
public:
    struct Options {
        std::filesystem::path store_dir;
        uint32_t shard_count = 0;
        RuleSet rules;  // may be empty: set_rules() brings others
        // Hands an alert to shard `shard`'s writer, whatever its channel holds (ShardWriter::post).
        std::function<void(uint32_t shard, HandoffItem item)> post;
    };
    // Starts the thread (which reads the persisted position, or takes the store's end).
    static base::Result<std::unique_ptr<Detector>> start(Options options);
    ~Detector() override;  // stop()

    // A shard committed: its new rows are read soon. Any thread; never blocks for long.
    void on_commit(uint32_t shard);
    // The rules from the next event on (a reload: SIGHUP). Match counts stay with rule ids.
    void set_rules(RuleSet rules);
    // Ends the thread: pending alerts are left to the next run (the position stays before them).
    void stop();

    base::Result<bool> stored_already(store::ShardDb& db, const HandoffItem& item) const override;
    void settled(const std::vector<uint64_t>& receipt_ids, bool committed) override;

    // {kind:"detection"} for STATUS: rules loaded (each with its matches) and refused (with
    // reasons), events evaluated, the newest one's time, the last error. Evaluations and matches
    // count since eventd started, an event evaluated again after a crash twice — its alert is
    // stored once (`EVENTS alert.* COUNT` counts those).
    nlohmann::json status_record() const;

private:
    explicit Detector(Options options);
    void run();
    // Reads and evaluates shard `shard`'s new events; the alerts, posted, committed before it returns
    // (false: stopping, or the feed failed).
    bool evaluate_shard(uint32_t shard, const RuleSet& rules, class EvaluationState& state);
    bool post_and_wait(uint32_t shard, std::vector<store::EventRow> alerts);
    void persist_position(class EvaluationState& state, bool force);

    Options options_;
    std::filesystem::path position_file_;

    mutable std::mutex mutex_;  // leaf: dirty_, stopping_, outcomes_, last_error_, rules_, matches_
    std::condition_variable wake_;
    std::set<uint32_t> dirty_;  // shards committed since they were last read
    bool stopping_ = false;
    std::vector<std::pair<uint64_t, bool>> outcomes_;  // settled receipts: id, committed
    std::string last_error_;
    std::shared_ptr<const RuleSet> rules_;     // the thread takes a copy of the pointer per turn
    std::map<std::string, uint64_t> matches_;  // by rule id, since eventd started
    uint64_t matches_total_ = 0;
    int64_t last_evaluated_ns_ = 0;  // the newest evaluated event's timestamp

    std::atomic<uint64_t> evaluated_{0};
    std::atomic<uint64_t> next_receipt_{1};
    std::thread thread_;
};

}  // namespace eventd::detect
