#include "nats/pull_consumer.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "nats/client.hpp"

namespace eventd::nats {
namespace {

using Clock = std::chrono::steady_clock;

// A request waits this long on the server for messages; then the server ends it with a 408.
constexpr auto kRequestExpiry = std::chrono::seconds(2);
// Requests older than the expiry and this are over on the server, status or no status: one
// that ends at exactly its max_bytes sends none (nats-server 2.9 consumer.go nextWaiting), a
// status can be lost with a cluster's leader, and nats-server 2.9.10 now and then ends a pair
// of idle requests without their 408s (the fleet benchmark's latency run: nothing delivered
// for 1.25 s, until a grace of 1 s had passed — PERFORMANCE.md §12). Then this side stops
// waiting for them. Short, because meanwhile nothing asks for messages; a status that comes
// after all only leaves the count of messages on their way low, and one request more goes out.
constexpr auto kRequestGrace = std::chrono::milliseconds(200);
// The inbox holds what the requests on their way deliver (two batches): far below these.
constexpr int kPendingMessagesLimit = 1 << 20;
constexpr int kPendingBytesLimit = 1 << 29;

bool is_status(natsMsg* msg) {
    const char* status = nullptr;
    return natsMsg_GetDataLength(msg) == 0 && natsMsgHeader_Get(msg, "Status", &status) == NATS_OK && status;
}

std::string header(natsMsg* msg, const char* key) {
    const char* value = nullptr;
    if (natsMsgHeader_Get(msg, key, &value) != NATS_OK || !value) return "";
    return value;
}

void reply(natsConnection* connection, natsMsg* msg, const std::string& body) {
    const char* subject = natsMsg_GetReply(msg);
    if (subject && *subject) natsConnection_Publish(connection, subject, body.data(), static_cast<int>(body.size()));
}

}  // namespace

PullConsumer::PullConsumer(natsConnection* connection, std::string request_subject, std::string inbox)
    : connection_(connection), request_subject_(std::move(request_subject)), inbox_(std::move(inbox)) {}

PullConsumer::~PullConsumer() {
    if (!subscription_) return;
    natsSubscription_Unsubscribe(subscription_);  // fails harmlessly on a closed connection
    natsSubscription_Destroy(subscription_);
}

base::Result<std::unique_ptr<PullConsumer>> PullConsumer::open(natsConnection* connection, const std::string& stream,
                                                               const std::string& durable) {
    natsInbox* inbox = nullptr;
    natsStatus s = natsInbox_Create(&inbox);
    if (s != NATS_OK) return nats_error("cannot make an inbox", s);
    std::unique_ptr<PullConsumer> consumer(
        new PullConsumer(connection, "$JS.API.CONSUMER.MSG.NEXT." + stream + "." + durable, inbox));
    natsInbox_Destroy(inbox);
    s = natsConnection_SubscribeSync(&consumer->subscription_, connection, (consumer->inbox_ + ".*").c_str());
    if (s == NATS_OK)
        s = natsSubscription_SetPendingLimits(consumer->subscription_, kPendingMessagesLimit, kPendingBytesLimit);
    if (s != NATS_OK) return nats_error("cannot subscribe to the inbox of consumer " + durable, s);
    return consumer;
}

// JetStream's pull request: {"batch": n, "max_bytes": b, "expires": ns}, replies to a subject
// of its own so that its status (408 Request Timeout, 409 …) says which request ended.
base::Status PullConsumer::request_more(size_t max_messages, int64_t max_bytes) {
    const std::string body = "{\"batch\":" + std::to_string(max_messages) +
                             (max_bytes > 0 ? ",\"max_bytes\":" + std::to_string(max_bytes) : "") + ",\"expires\":" +
                             std::to_string(std::chrono::nanoseconds(kRequestExpiry).count()) + "}";
    const std::string reply_to = inbox_ + "." + std::to_string(++requests_sent_);
    const natsStatus s = natsConnection_PublishRequest(connection_, request_subject_.c_str(), reply_to.c_str(),
                                                       body.data(), static_cast<int>(body.size()));
    if (s != NATS_OK) return nats_error("cannot ask for messages", s);
    outstanding_ += static_cast<int64_t>(max_messages);
    last_request_ = Clock::now();
    return {};
}

base::Status PullConsumer::on_status(natsMsg* status) {
    const std::string code = header(status, "Status");
    const std::string description = header(status, "Description");
    if (code == "100") return {};  // an idle heartbeat or flow control: not asked for, harmless
    if (code == "404" || code == "408" || code == "409") {
        // The request ended with this many of its messages undelivered (expired, or its
        // max_bytes reached); none are on their way for it any more.
        const std::string pending = header(status, "Nats-Pending-Messages");
        if (!pending.empty()) {
            outstanding_ = std::max<int64_t>(0, outstanding_ - std::strtoll(pending.c_str(), nullptr, 10));
            return {};
        }
        // Without a count: the consumer's leader changed (every request is dropped and must
        // be made again), or the request was refused.
        if (code != "409" || description == "Leadership Change") {
            outstanding_ = 0;
            return {};
        }
    }
    return base::Error{EIO, "the consumer answered " + code + (description.empty() ? "" : " " + description)};
}

base::Result<std::vector<natsMsg*>> PullConsumer::next(size_t max_messages, int64_t max_bytes,
                                                       std::chrono::milliseconds wait) {
    max_messages = std::max<size_t>(1, max_messages);
    const auto deadline = Clock::now() + wait;
    std::vector<natsMsg*> messages;
    auto fail = [&](base::Error e) {
        // Not acknowledged: JetStream delivers them again after its AckWait.
        for (natsMsg* m : messages) natsMsg_Destroy(m);
        return e;
    };
    // When the requests on their way are taken as over, whether or not their statuses came.
    auto requests_over_at = [this] { return last_request_ + kRequestExpiry + kRequestGrace; };
    while (messages.size() < max_messages) {
        const auto now = Clock::now();
        if (outstanding_ > 0 && now > requests_over_at()) outstanding_ = 0;
        // Up to two batches on their way: one arriving while the caller works on the last.
        if (outstanding_ <= static_cast<int64_t>(max_messages)) {
            if (auto s = request_more(max_messages, max_bytes); !s) return fail(s.error());
        }
        // The first message is waited for — until the deadline, or until the requests on their
        // way are taken as over (above), whichever comes first; the rest are what has arrived.
        auto until = deadline;
        if (outstanding_ > 0) until = std::min(until, requests_over_at());
        const int64_t wait_ms =
            messages.empty() ? std::chrono::ceil<std::chrono::milliseconds>(until - now).count() : 0;
        natsMsg* msg = nullptr;
        const natsStatus s = natsSubscription_NextMsg(&msg, subscription_, std::max<int64_t>(0, wait_ms));
        if (s == NATS_TIMEOUT) {
            if (!messages.empty() || Clock::now() >= deadline) break;
            continue;
        }
        if (s == NATS_NO_RESPONDERS) return fail(base::Error{EIO, "JetStream does not answer pull requests"});
        if (s != NATS_OK) return fail(nats_error("cannot read the consumer's messages", s));
        if (is_status(msg)) {
            auto st = on_status(msg);
            natsMsg_Destroy(msg);
            if (!st) return fail(st.error());
            continue;
        }
        outstanding_ = std::max<int64_t>(0, outstanding_ - 1);
        messages.push_back(msg);
    }
    return messages;
}

void ack(natsConnection* connection, natsMsg* msg) { reply(connection, msg, "+ACK"); }

void nak(natsConnection* connection, natsMsg* msg, std::chrono::milliseconds delay) {
    reply(connection, msg, "-NAK {\"delay\":" + std::to_string(std::chrono::nanoseconds(delay).count()) + "}");
}

void term(natsConnection* connection, natsMsg* msg) { reply(connection, msg, "+TERM"); }

uint64_t stream_sequence(natsMsg* msg) {
    jsMsgMetaData* meta = nullptr;
    if (natsMsg_GetMetaData(&meta, msg) != NATS_OK) return 0;
    const uint64_t sequence = meta->Sequence.Stream;
    jsMsgMetaData_Destroy(meta);
    return sequence;
}

uint64_t stored_at_ns(natsMsg* msg) {
    jsMsgMetaData* meta = nullptr;
    if (natsMsg_GetMetaData(&meta, msg) != NATS_OK) return 0;
    const uint64_t at = meta->Timestamp > 0 ? static_cast<uint64_t>(meta->Timestamp) : 0;
    jsMsgMetaData_Destroy(meta);
    return at;
}

}  // namespace eventd::nats
