// eventd's collector mode (issue 12 part 3; docs/FORWARD.md "Collector"): one thread reads the
// records eventd-forward published from a JetStream durable pull consumer and hands them to the
// shard writers — KMES events and gap records routed by (boot, cpu), every other record to
// shard 0 — so that every copy of a record meets the same shard's duplicate check
// (stored_already, which the writer calls in its transaction; KMES sequences are also checked
// against every file's state, so a change of StorageShards cannot double them). A message is
// acknowledged only once the commit that holds it succeeded (settled); a failed batch asks for it again
// after a delay; a collector crash or a lost connection leaves it unacknowledged, and JetStream
// delivers it again after AckWaitSeconds. So every record is stored exactly once: at least
// once by redelivery, at most once by the check.
//
// Every NATS call is made on the collector's thread (or, once it has ended, by the destructor):
// writers only move settled messages to a queue, so a stalled NATS connection never holds a
// shard's lock. Any NATS failure ends the session (connection, consumer binding, the messages
// not yet acknowledged); a new one starts after a jittered backoff — like eventd-forward, one
// recovery path.
//
// Issue 40, poison messages: a message that is not a host's own eventd records (unreadable,
// no or another host's Eventd-Host header, a forged product record) is never retried and never
// dropped silently. It becomes one synthetic.collector_rejected record (host, subject, stream
// sequence, size, reason, its first bytes), stored like any record; once that commit holds it,
// the message is terminated (JetStream +TERM, never delivered again) and counted as refused.
// Until then it is a pending message like the others: a crash delivers it again, and the
// record's duplicate check (the stream's timestamp of the message, any run) stores it once.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/log_budget.hpp"
#include "eventd/collector/source_config.hpp"
#include "eventd/ingest/redelivery.hpp"
#include "eventd/ingest/shard_writer.hpp"
#include "store/sequence_ranges.hpp"

struct __natsMsg;
struct __natsConnection;

namespace eventd::collector {

class Collector final : public RedeliveringSource {
public:
    // `writers` outlive the collector's thread (stop_fetching), not the collector itself.
    // `accounted_elsewhere`: the sequences every shard file held at startup (historical files
    // included), which records are checked against too; it outlives the collector.
    // `on_fatal`: the thread ended on an unexpected exception (eventd must fail and restart).
    // `run_id`: the boot id of the collector's own records (CollectorSource::run_id).
    Collector(SourceConfig config, std::vector<ShardWriter*> writers, const store::SequenceState* accounted_elsewhere,
              const kmes::Guid& run_id, std::function<void(const std::string& why)> on_fatal);
    // Closes the session after a last flush of acknowledgements (the writers have finished).
    ~Collector() override;
    Collector(const Collector&) = delete;
    Collector& operator=(const Collector&) = delete;

    void start();
    // Asks the fetching thread to end (returns at once); stop_fetching() also waits for it.
    // The session stays so the writers' last commits are still acknowledged (destructor).
    void request_stop();
    void stop_fetching();

    // RedeliveringSource: KMES events and gap records are stored already when their sequences
    // are accounted (this shard, committed or in this transaction, or the other files); other
    // synthetic records when an identical row is stored.
    base::Result<bool> stored_already(store::ShardDb& db, const HandoffItem& item) const override;
    // The committed messages are to be acknowledged, the failed ones delivered again — queued
    // for the collector's thread, which sends them (every NATS call is made there).
    void settled(const std::vector<uint64_t>& tickets, bool committed) override;

    // {kind:"collector"} for STATUS: the source, the session's state, counters and the
    // consumer's lag as of its last look (about once a second).
    nlohmann::json status_record() const;
    uint64_t received() const { return received_.load(std::memory_order_relaxed); }

private:
    struct Session;
    void run();
    void run_session(Session& session);
    void deliver(std::vector<__natsMsg*>& messages);
    base::Result<std::vector<HandoffItem>> items_of(__natsMsg* msg) const;
    HandoffItem rejection_of(__natsMsg* msg, const std::string& reason) const;  // synthetic.collector_rejected
    void log_refusal(__natsMsg* msg, const std::string& reason);
    void report_unlogged_refusals(uint64_t unlogged);
    void send_settled(__natsConnection* connection);  // the acknowledgements settled() queued (none without one)
    void refresh_lag(Session& session);
    void end_session(Session& session);  // drops the unacknowledged messages, then the handles
    void set_state(const std::string& state, const std::string& error = "");
    bool wait_backoff(std::chrono::milliseconds wait);  // false once stopping

    const SourceConfig config_;
    std::vector<ShardWriter*> writers_;
    const store::SequenceState* accounted_elsewhere_;
    const kmes::Guid run_id_;
    std::function<void(const std::string&)> on_fatal_;
    std::thread thread_;
    std::atomic<bool> stopping_{false};
    std::mutex wake_mutex_;  // leaf: the backoff's wait
    std::condition_variable wake_;
    std::unique_ptr<Session> session_;  // the current one; only the thread replaces it

    // Delivered messages not yet settled, by ticket, and the settled ones whose acknowledgement
    // (true) or redelivery request (false) is still to be sent. Leaf lock: taken by the
    // collector's thread and by writer threads in settled() (which hold none of their locks).
    mutable std::mutex pending_mutex_;
    struct PendingMessage {
        __natsMsg* msg;
        uint32_t unsettled;  // its records not yet settled
        bool committed;      // every settled record committed
        bool rejected;       // its one record is its synthetic.collector_rejected: terminated once stored
    };
    struct SettledMessage {
        __natsMsg* msg;
        bool committed;
        bool rejected;
    };
    std::unordered_map<uint64_t, PendingMessage> pending_;
    std::vector<SettledMessage> settled_;
    uint64_t next_ticket_ = 1;       // collector thread only
    std::string last_logged_error_;  // collector thread only: why the last session failed
    // Collector thread only: a hostile publisher must not flood the journal (every refusal is a
    // record and a counter anyway).
    base::LogBudget refusal_log_{10};

    // For STATUS. Counters are relaxed: statistics, nothing is published with them.
    mutable std::mutex state_mutex_;  // leaf: state_, last_error_
    std::string state_ = "starting";
    std::string last_error_;
    std::atomic<uint64_t> received_{0};           // records
    std::atomic<uint64_t> messages_received_{0};
    std::atomic<uint64_t> refused_{0};  // messages terminated once their rejection was stored
    std::atomic<uint64_t> acked_{0};
    std::atomic<uint64_t> redelivery_requested_{0};
    std::atomic<uint64_t> sessions_{0};
    std::atomic<int64_t> consumer_pending_{-1};  // -1: not known yet
    std::atomic<int64_t> consumer_ack_pending_{-1};
    std::atomic<int64_t> consumer_redelivered_{-1};
    std::atomic<uint64_t> last_received_ns_{0};
};

}  // namespace eventd::collector
