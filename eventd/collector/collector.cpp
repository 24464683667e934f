#include "eventd/collector/collector.hpp"

#include <nats/nats.h>

#include <chrono>
#include <span>

#include <spdlog/spdlog.h>

#include "base/sync_point.hpp"
#include "base/display_escape.hpp"
#include "base/fnv1a.hpp"
#include "base/jittered_backoff.hpp"
#include "base/reserved_types.hpp"
#include "eventd/collector/record_row.hpp"
#include "eventd/ingest/synthetic.hpp"
#include "base/thread_boundary.hpp"
#include "nats/client.hpp"
#include "nats/pull_consumer.hpp"
#include "nats/server_list.hpp"
#include "nats/subject.hpp"
#include "protocol/status.hpp"

namespace eventd::collector {
namespace {

using nats::nats_error;
using Clock = std::chrono::steady_clock;

constexpr int64_t kNanosPerSecond = 1'000'000'000;
constexpr int64_t kFetchWaitMs = 250;  // how long one fetch waits for messages (and stop_fetching for it)
constexpr int64_t kFetchMaxBytes = 16 << 20;  // the most one pull request asks for (see run_session)
constexpr auto kLagInterval = std::chrono::seconds(1);
constexpr int64_t kRequestTimeoutMs = 5000;  // connect and JetStream API requests
constexpr int64_t kFinalFlushMs = 2000;      // the last acknowledgements at shutdown
constexpr char kHostHeader[] = "Eventd-Host";  // forward/forwarder.cpp sets it
constexpr int64_t kRedeliveryDelayMs = 1000;   // a record whose commit failed comes again after this

// KMES events and gap records by (boot, cpu): every copy of one meets the same writer's check
// within a run (and the startup state across runs). Every other record goes to shard 0, whatever
// the shard count: its duplicate check is an identical row in that shard's file. The cpu id is
// hashed as two little-endian bytes, the same on every machine.
size_t shard_of(const HandoffItem& item, size_t shards) {
    if (!item.accounting) return 0;
    const store::EventRow& row = item.row;
    uint64_t h = base::fnv1a64(base::kFnv1aOffsetBasis,
                               std::string_view(reinterpret_cast<const char*>(row.boot_id.data()), row.boot_id.size()));
    const char cpu[2] = {static_cast<char>(item.accounting->cpu_id & 0xff), static_cast<char>(item.accounting->cpu_id >> 8)};
    h = base::fnv1a64(h, std::string_view(cpu, sizeof cpu));
    return h % shards;
}

}  // namespace

struct Collector::Session {
    natsOptions* options = nullptr;
    natsConnection* connection = nullptr;
    jsCtx* js = nullptr;
    std::unique_ptr<nats::PullConsumer> pull;
    Clock::time_point lag_checked{};

    ~Session() {
        pull.reset();
        if (connection) natsConnection_Close(connection);
        if (js) jsCtx_Destroy(js);
        if (connection) natsConnection_Destroy(connection);
        if (options) natsOptions_Destroy(options);
    }
};

Collector::Collector(SourceConfig config, std::vector<ShardWriter*> writers,
                     const store::SequenceState* accounted_elsewhere, const kmes::Guid& run_id,
                     std::function<void(const std::string&)> on_fatal)
    : config_(std::move(config)),
      writers_(std::move(writers)),
      accounted_elsewhere_(accounted_elsewhere),
      run_id_(run_id),
      on_fatal_(std::move(on_fatal)) {}

Collector::~Collector() {
    stop_fetching();
    // The thread has ended: what the writers committed last is acknowledged from here.
    send_settled(session_ ? session_->connection : nullptr);
    if (session_ && session_->connection) natsConnection_FlushTimeout(session_->connection, kFinalFlushMs);
    if (session_) end_session(*session_);
    session_.reset();
}

void Collector::start() {
    thread_ = std::thread([this] {
        // An exception here is a bug: eventd fails (and systemd restarts it), as when a writer
        // thread dies — a collector that ingests nothing must not look healthy.
        base::run_guarded(
            "the collector", [this] { run(); },
            [this](const std::string& why) {
                set_state("stopped", why);
                if (on_fatal_) on_fatal_(why);
            });
    });
}

void Collector::request_stop() {
    {
        std::lock_guard lock(wake_mutex_);
        stopping_.store(true);
    }
    wake_.notify_all();
}

void Collector::stop_fetching() {
    request_stop();
    if (thread_.joinable()) thread_.join();
}

void Collector::set_state(const std::string& state, const std::string& error) {
    std::lock_guard lock(state_mutex_);
    state_ = state;
    if (!error.empty()) last_error_ = error;
}

bool Collector::wait_backoff(std::chrono::milliseconds wait) {
    std::unique_lock lock(wake_mutex_);
    return !wake_.wait_for(lock, wait, [this] { return stopping_.load(); });
}

void Collector::run() {
    // From 100 ms to MaxBackoffMs, jittered: collectors restarted together do not hammer NATS in step.
    base::JitteredBackoff backoff(std::chrono::milliseconds(config_.max_backoff_ms));
    while (!stopping_.load()) {
        session_ = std::make_unique<Session>();
        sessions_.fetch_add(1, std::memory_order_relaxed);
        set_state("connecting");
        const uint64_t before = received_.load(std::memory_order_relaxed);
        run_session(*session_);
        if (stopping_.load()) break;  // the session stays: the destructor acknowledges the last commits
        // A failed session ends now, not after the backoff: what it delivered and nothing
        // committed yet is dropped here and comes again after AckWaitSeconds.
        end_session(*session_);
        session_.reset();
        if (received_.load(std::memory_order_relaxed) != before) backoff.reset();  // it worked for a while
        set_state("backing off");
        if (!wait_backoff(backoff.next())) break;
    }
}

// One session: connect, bind the durable consumer (created or updated to the configured
// acknowledgement settings), fetch until stopping or a failure.
void Collector::run_session(Session& s) {
    auto fail = [this](const base::Error& e) {
        // One line per new reason, not per attempt: an outage of NATS is one event in the log.
        if (e.message != last_logged_error_) spdlog::warn("collector: {}; trying again (with backoff)", e.message);
        last_logged_error_ = e.message;
        set_state("backing off", e.message);
    };
    natsStatus st = natsOptions_Create(&s.options);
    if (st != NATS_OK) return fail(nats_error("cannot set up the NATS options", st));
    if (auto a = nats::set_session_options(s.options, "eventd collector", kRequestTimeoutMs, config_.nats_url,
                                           config_.auth);
        !a)
        return fail(a.error());
    st = natsConnection_Connect(&s.connection, s.options);
    if (st != NATS_OK) return fail(nats_error("cannot connect to NATS at " + nats::servers_text(config_.nats_url), st));
    jsOptions js_options;
    jsOptions_Init(&js_options);
    js_options.Wait = kRequestTimeoutMs;
    st = natsConnection_JetStream(&s.js, s.connection, &js_options);
    if (st != NATS_OK) return fail(nats_error("cannot use JetStream on " + nats::connected_url(s.connection), st));

    jsConsumerConfig consumer;
    jsConsumerConfig_Init(&consumer);
    consumer.Durable = config_.durable.c_str();
    consumer.AckPolicy = js_AckExplicit;
    consumer.DeliverPolicy = js_DeliverAll;
    consumer.AckWait = int64_t(config_.ack_wait_seconds) * kNanosPerSecond;
    consumer.MaxAckPending = config_.max_ack_pending;
    consumer.MaxDeliver = -1;  // a record is never given up on
    if (!config_.filter_subject.empty()) consumer.FilterSubject = config_.filter_subject.c_str();
    jsConsumerInfo* info = nullptr;
    jsErrCode code = static_cast<jsErrCode>(0);
    st = js_GetConsumerInfo(&info, s.js, config_.stream.c_str(), config_.durable.c_str(), nullptr, &code);
    if (st == NATS_OK) {
        jsConsumerInfo_Destroy(info);
        info = nullptr;
        st = js_UpdateConsumer(&info, s.js, config_.stream.c_str(), &consumer, nullptr, &code);
        if (st != NATS_OK) {  // e.g. a filter the server will not change: keep the consumer as it is
            spdlog::warn("collector: consumer {} of stream {} kept as it is: {}", config_.durable, config_.stream,
                         nats_error("cannot update it", st).message);
            st = NATS_OK;
        }
    } else if (st == NATS_NOT_FOUND || code == JSConsumerNotFoundErr) {
        st = js_AddConsumer(&info, s.js, config_.stream.c_str(), &consumer, nullptr, &code);
    }
    // The server keeps an existing consumer's acknowledgement policy: one made by hand with
    // other settings would silently lose records (no redelivery) — refuse it.
    if (st == NATS_OK && info && info->Config &&
        (info->Config->AckPolicy != js_AckExplicit || info->Config->MaxDeliver > 0)) {
        jsConsumerInfo_Destroy(info);
        return fail(base::Error{EINVAL, "consumer " + config_.durable + " of stream " + config_.stream +
                                            " does not acknowledge explicitly with unlimited deliveries, which "
                                            "exactly-once needs: delete it or choose another Durable"});
    }
    if (info) jsConsumerInfo_Destroy(info);
    if (st != NATS_OK) {
        if (code == JSStreamNotFoundErr)
            return fail(base::Error{ENOENT, "stream " + config_.stream +
                                                " does not exist yet (no eventd-forward has created it)"});
        return fail(nats_error("cannot use consumer " + config_.durable + " of stream " + config_.stream, st));
    }
    auto pull = nats::PullConsumer::open(s.connection, config_.stream, config_.durable);
    if (!pull) return fail(pull.error());
    s.pull = std::move(*pull);
    spdlog::info("collector: consuming stream {} through durable consumer {} at {}", config_.stream, config_.durable,
                 nats::connected_url(s.connection));
    last_logged_error_.clear();
    set_state("connected");

    // A fetch returns up to FetchBatch messages of those arrived; the requests on their way ask
    // for about kFetchMaxBytes each too: packed messages hold hundreds of records, and 1000 of
    // them were a 64 MB fetch while the writers idled (PERFORMANCE.md §12).
    while (!stopping_.load()) {
        send_settled(s.connection);
        report_unlogged_refusals(refusal_log_.take_unlogged());
        if (Clock::now() - s.lag_checked >= kLagInterval) refresh_lag(s);
        auto messages = s.pull->next(config_.fetch_batch, kFetchMaxBytes, std::chrono::milliseconds(kFetchWaitMs));
        if (!messages) return fail(base::Error{messages.error().code, "fetching from consumer " + config_.durable +
                                                                          " failed: " + messages.error().message});
        if (!messages->empty()) deliver(*messages);
    }
}

// A message's records, each checked and made a row; an error refuses the whole message (a
// forwarder never publishes a bad record, so one means the message is not a host's own).
base::Result<std::vector<HandoffItem>> Collector::items_of(natsMsg* msg) const {
    const char* host = nullptr;
    if (natsMsgHeader_Get(msg, kHostHeader, &host) != NATS_OK || !host || !*host)
        return base::Error{EINVAL, "no Eventd-Host header"};
    const auto* data = reinterpret_cast<const uint8_t*>(natsMsg_GetData(msg));
    auto items = items_of_message(std::span(data, static_cast<size_t>(natsMsg_GetDataLength(msg))), host);
    if (!items) return items.error();
    std::string subject;  // of the previous record's type: a message holds one type
    for (size_t i = 0; i < items->size(); ++i) {
        const std::string& type = (*items)[i].row.event_type;
        // NATS permissions are per subject: a host may publish only under its own name.
        if (i == 0 || type != (*items)[i - 1].row.event_type)
            subject = nats::subject_for(config_.subject_prefix, host, type);
        if (natsMsg_GetSubject(msg) != subject)
            return base::Error{EINVAL, "the subject is not " + config_.subject_prefix +
                                           ".<Eventd-Host>.<event_type> of the record (Eventd-Host " + host + ")"};
        // Issue 39: the product's namespaces hold only the product's records, on a host and here
        // alike (base/reserved_types.hpp) — a host's eventd never forwards another, since its shim
        // refuses them to emitters, so one means the message is not a host's own.
        const store::EventRow& row = (*items)[i].row;
        if (!base::has_product_origin(type, row.origin_class))
            return base::Error{EPERM, "record " + std::to_string(i) + " (" + type + ") has origin class " +
                                          (row.origin_class ? std::to_string(*row.origin_class) : "none") +
                                          ": only the product writes that namespace, with another (forged)"};
    }
    return items;
}

void Collector::deliver(std::vector<natsMsg*>& messages) {
    // Records go to their shard's writer in chunks while the rest of the fetch is still being
    // read: a fetch of packed messages holds tens of thousands of records, and converting them
    // all before handing any over left the writers idle meanwhile (PERFORMANCE.md §12).
    // push() blocks while a shard's channel is full: JetStream holds the rest (MaxAckPending) —
    // the collector's backpressure. It returns false once the writer is finishing (shutdown
    // closes the channels first); what it did not take stays unacknowledged and comes again.
    constexpr size_t kPushChunk = 1000;
    std::vector<std::vector<HandoffItem>> per_shard(writers_.size());
    auto push = [&](size_t shard) {
        if (!per_shard[shard].empty()) writers_[shard]->handoff().push(per_shard[shard]);
    };
    for (natsMsg* msg : messages) {
        auto items = items_of(msg);
        const bool rejected = !items;
        if (rejected) {
            // Not a host's own records: its rejection record takes its place, and the message
            // is terminated once that is stored (send_settled) — never delivered again and
            // again, never gone without a trace (a limits stream keeps it for inspection).
            log_refusal(msg, items.error().message);
            std::vector<HandoffItem> rejection;
            rejection.push_back(rejection_of(msg, items.error().message));
            items = std::move(rejection);
        } else {
            received_.fetch_add(items->size(), std::memory_order_relaxed);
            messages_received_.fetch_add(1, std::memory_order_relaxed);
            last_received_ns_.store(synthetic::now_ns(), std::memory_order_relaxed);
        }
        // Every record of the message carries its ticket; the message is acknowledged once all
        // of them are settled (settled()), each one stored or found stored already. It is
        // pending before any of its records reaches a writer, which may settle them at once.
        const uint64_t ticket = next_ticket_++;
        {
            std::lock_guard lock(pending_mutex_);
            pending_.emplace(ticket, PendingMessage{msg, static_cast<uint32_t>(items->size()), true, rejected});
        }
        for (HandoffItem& item : *items) {
            item.receipt = {this, ticket};
            const size_t shard = shard_of(item, writers_.size());
            per_shard[shard].push_back(std::move(item));
            if (per_shard[shard].size() >= kPushChunk) push(shard);
        }
    }
    messages.clear();
    for (size_t shard = 0; shard < per_shard.size(); ++shard) push(shard);
}

HandoffItem Collector::rejection_of(natsMsg* msg, const std::string& reason) const {
    synthetic::RejectedMessage m;
    const char* host = nullptr;
    if (natsMsgHeader_Get(msg, kHostHeader, &host) == NATS_OK && host) m.host = host;
    m.subject = natsMsg_GetSubject(msg);
    m.stream = config_.stream;
    m.stream_sequence = nats::stream_sequence(msg);
    m.stored_at_ns = nats::stored_at_ns(msg);
    const int length = natsMsg_GetDataLength(msg);
    m.size = length > 0 ? static_cast<uint64_t>(length) : 0;
    const auto* data = reinterpret_cast<const uint8_t*>(natsMsg_GetData(msg));
    if (data) m.head.assign(data, data + std::min<size_t>(m.size, synthetic::kRejectedHeadBytes));
    m.reason = reason;
    return HandoffItem{synthetic::collector_rejected(run_id_, m)};
}

void Collector::log_refusal(natsMsg* msg, const std::string& reason) {
    uint64_t overdue = 0;
    const bool log = refusal_log_.take(overdue);
    report_unlogged_refusals(overdue);
    if (!log) return;
    spdlog::error("collector: message {} of stream {} (subject {}) refused: {}", nats::stream_sequence(msg),
                  config_.stream, base::display_escaped(natsMsg_GetSubject(msg)), base::display_escaped(reason));
}

void Collector::report_unlogged_refusals(uint64_t unlogged) {
    if (unlogged == 0) return;
    spdlog::error(
        "collector: {} more message(s) refused within a minute, not logged one by one (see the "
        "synthetic.collector_rejected records)",
        unlogged);
}

// Issue 12 part 3: JetStream delivers a message again after a collector crash or an
// unacknowledged commit, and a host's forwarder may publish one twice beyond the stream's
// duplicate window. Routing by (boot, cpu) (shard_of) sends every copy to the same shard.
base::Result<bool> Collector::stored_already(store::ShardDb& db, const HandoffItem& item) const {
    if (const auto& a = item.accounting)
        return db.accounted(item.row.boot_id, a->cpu_id, a->first, a->last, accounted_elsewhere_);
    // A rejection record comes again only with its message, to any later run (rejection_of).
    return db.contains_same(item.row, item.row.event_type == synthetic::kCollectorRejectedType);
}

void Collector::settled(const std::vector<uint64_t>& tickets, bool committed) {
    std::lock_guard lock(pending_mutex_);
    for (uint64_t ticket : tickets) {  // a ticket once per record of its message in the batch
        const auto it = pending_.find(ticket);
        if (it == pending_.end()) continue;  // its session ended: JetStream delivers it again
        PendingMessage& m = it->second;
        m.committed = m.committed && committed;
        if (--m.unsettled > 0) continue;
        // A message partly committed comes again when the rest failed: the committed part is
        // then found stored already, record by record, and the rest completes it.
        settled_.push_back({m.msg, m.committed, m.rejected});
        pending_.erase(it);
    }
}

void Collector::send_settled(__natsConnection* connection) {
    std::vector<SettledMessage> settled;
    {
        std::lock_guard lock(pending_mutex_);
        settled.swap(settled_);
    }
    for (auto [msg, committed, rejected] : settled) {
        // Fire and forget: a lost acknowledgement only means one more delivery, which the
        // writer's duplicate check absorbs.
        if (connection && committed && rejected) {
            // Tests die here: stored, not yet terminated — delivered again, stored once.
            KMES_SYNC_POINT("Collector::send_settled:before_term");
            nats::term(connection, msg);  // its rejection record is stored
            refused_.fetch_add(1, std::memory_order_relaxed);
        } else if (connection && committed) {
            nats::ack(connection, msg);
            acked_.fetch_add(1, std::memory_order_relaxed);
        } else if (connection) {
            // A failed commit (a full disk, say): again after a pause, not in a hot loop.
            nats::nak(connection, msg, std::chrono::milliseconds(kRedeliveryDelayMs));
            redelivery_requested_.fetch_add(1, std::memory_order_relaxed);
        }
        natsMsg_Destroy(msg);
    }
}

void Collector::end_session(Session& s) {
    // Before the subscription and connection go: no acknowledgement may use them afterwards.
    // Settled messages are acknowledged first (on a lost connection that fails harmlessly);
    // the unsettled ones come again after AckWaitSeconds.
    send_settled(s.connection);
    std::lock_guard lock(pending_mutex_);
    for (auto& [ticket, m] : pending_) natsMsg_Destroy(m.msg);
    pending_.clear();
}

void Collector::refresh_lag(Session& s) {
    s.lag_checked = Clock::now();
    jsConsumerInfo* info = nullptr;
    jsErrCode code = static_cast<jsErrCode>(0);
    // (natsSubscription_GetConsumerInfo refuses a subscription bound to an existing consumer.)
    if (js_GetConsumerInfo(&info, s.js, config_.stream.c_str(), config_.durable.c_str(), nullptr, &code) != NATS_OK)
        return;  // the next fetch fails too if NATS is gone; STATUS keeps the last known values
    consumer_pending_.store(static_cast<int64_t>(info->NumPending), std::memory_order_relaxed);
    consumer_ack_pending_.store(info->NumAckPending, std::memory_order_relaxed);
    consumer_redelivered_.store(info->NumRedelivered, std::memory_order_relaxed);
    jsConsumerInfo_Destroy(info);
}

nlohmann::json Collector::status_record() const {
    auto known = [](const std::atomic<int64_t>& v) -> std::optional<int64_t> {
        const int64_t x = v.load(std::memory_order_relaxed);
        if (x < 0) return std::nullopt;
        return x;
    };
    uint64_t duplicates = 0;
    for (const ShardWriter* w : writers_) duplicates += w->stats().duplicates.load(std::memory_order_relaxed);
    size_t unacked = 0;
    {
        std::lock_guard lock(pending_mutex_);
        for (const auto& [ticket, m] : pending_) unacked += m.unsettled;
    }
    protocol::status::Collector c;
    c.nats_url = config_.nats_url;
    c.stream = config_.stream;
    c.durable = config_.durable;
    c.pending = known(consumer_pending_);
    c.ack_pending = known(consumer_ack_pending_);
    c.redelivered = known(consumer_redelivered_);
    c.received = received_.load(std::memory_order_relaxed);
    c.messages = messages_received_.load(std::memory_order_relaxed);
    c.duplicates = duplicates;
    c.acked = acked_.load(std::memory_order_relaxed);
    c.uncommitted = unacked;
    c.redelivery_requested = redelivery_requested_.load(std::memory_order_relaxed);
    c.refused = refused_.load(std::memory_order_relaxed);
    c.sessions = sessions_.load(std::memory_order_relaxed);
    if (const uint64_t last = last_received_ns_.load(std::memory_order_relaxed)) c.last_received_ns = last;
    {
        std::lock_guard lock(state_mutex_);
        c.state = state_;
        if (!last_error_.empty()) c.last_error = last_error_;
    }
    return protocol::status::to_record(c);
}

}  // namespace eventd::collector
