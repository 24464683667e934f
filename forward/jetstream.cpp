#include "forward/jetstream.hpp"

#include <nats/nats.h>

#include <nlohmann/json.hpp>

#include "nats/client.hpp"
#include "nats/server_list.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string_view>

namespace eventd::forward {
namespace {

using nats::nats_error;

constexpr int64_t kNanosPerSecond = 1'000'000'000;

// What a JetStream ack says (its body is `{"stream":…,"seq":…[,"duplicate":true]}`, or
// `{"error":{"code":…,"description":…}}` when the stream refused the message). Only a refusal
// is parsed as JSON; the common case is two substring searches.
struct AckReply {
    bool ok = false;
    bool duplicate = false;
    std::string error;
};

AckReply read_ack(natsMsg* msg) {
    AckReply ack;
    if (natsMsg_IsNoResponders(msg)) {
        ack.error = "no JetStream stream stores the subject (no responders)";
        return ack;
    }
    const std::string_view body(natsMsg_GetData(msg), static_cast<size_t>(natsMsg_GetDataLength(msg)));
    if (body.find("\"error\"") != std::string_view::npos || body.find("\"seq\"") == std::string_view::npos) {
        const auto parsed = nlohmann::json::parse(body, nullptr, false);
        ack.error = "JetStream refused a message";
        if (parsed.is_object() && parsed.contains("error") && parsed["error"].is_object()) {
            const auto& e = parsed["error"];
            if (e.contains("description") && e["description"].is_string())
                ack.error += ": " + e["description"].get<std::string>();
            if (e.contains("err_code") && e["err_code"].is_number())
                ack.error += " (error " + std::to_string(e["err_code"].get<int64_t>()) + ")";
        } else {
            ack.error += ": unexpected reply '" + std::string(body.substr(0, 200)) + "'";
        }
        return ack;
    }
    ack.ok = true;
    ack.duplicate = body.find("\"duplicate\":true") != std::string_view::npos;
    return ack;
}

// The message number at the end of an ack's subject `<inbox>.<number>`; 0 if there is none.
uint64_t message_number(const char* subject) {
    const std::string_view s(subject ? subject : "");
    const auto dot = s.rfind('.');
    uint64_t n = 0;
    if (dot == std::string_view::npos) return 0;
    const auto [end, ec] = std::from_chars(s.data() + dot + 1, s.data() + s.size(), n);
    return ec == std::errc() && end == s.data() + s.size() ? n : 0;
}

}  // namespace

// nats.c delivers connection events and acks on threads of its own, also after
// natsConnection_Close returned: the handles are released only once the closed callback and the
// ack subscription's completion callback — the last ones — have run, and `closing` keeps the
// disconnect that Close itself causes from being reported as a failure.
struct JetStream::Handles {
    natsOptions* options = nullptr;
    natsConnection* connection = nullptr;
    jsCtx* js = nullptr;
    natsSubscription* acks = nullptr;
    std::string inbox;  // the acks' subjects are <inbox>.<message number>
    std::atomic<bool> closing{false};
    std::mutex mutex;
    std::condition_variable closed_cv;
    bool closed = false;     // guarded by mutex
    bool acks_done = false;  // guarded by mutex

    // nats.c's threads: `flag` (closed or acks_done) is set and the destructor woken.
    void finished(bool Handles::*flag) {
        std::lock_guard lock(mutex);
        this->*flag = true;
        closed_cv.notify_all();
    }

    ~Handles() {
        closing = true;
        if (connection) {
            natsConnection_Close(connection);
            std::unique_lock lock(mutex);
            closed_cv.wait_for(lock, std::chrono::seconds(10), [this] { return closed && (acks == nullptr || acks_done); });
        }
        if (acks) natsSubscription_Destroy(acks);
        if (js) jsCtx_Destroy(js);
        if (connection) natsConnection_Destroy(connection);
        if (options) natsOptions_Destroy(options);
    }
};

JetStream::JetStream(const ForwardConfig& config, AckWindow& window, std::function<void()> on_failure)
    : config_(config), window_(window), on_failure_(std::move(on_failure)), handles_(std::make_unique<Handles>()) {}

JetStream::~JetStream() = default;

base::Result<std::unique_ptr<JetStream>> JetStream::connect(const ForwardConfig& config, AckWindow& window,
                                                           std::function<void()> on_failure) {
    std::unique_ptr<JetStream> self(new JetStream(config, window, std::move(on_failure)));
    Handles& h = *self->handles_;
    natsStatus s = natsOptions_Create(&h.options);
    if (s != NATS_OK) return nats_error("cannot set up the NATS options", s);
    if (auto st = nats::set_session_options(h.options, "eventd-forward " + config.host_name, config.ack_timeout_ms,
                                            config.nats_url, config.auth);
        !st)
        return st.error();
    // A lost connection fails the session: its pending acks can never arrive.
    s = natsOptions_SetDisconnectedCB(
        h.options,
        [](natsConnection*, void* closure) {
            auto* self = static_cast<JetStream*>(closure);
            if (self->handles_->closing) return;  // our own Close
            self->window_.failed("the connection to NATS was lost");
            if (self->on_failure_) self->on_failure_();
        },
        self.get());
    if (s == NATS_OK)
        s = natsOptions_SetClosedCB(
            h.options,
            [](natsConnection*, void* closure) { static_cast<Handles*>(closure)->finished(&Handles::closed); },
            &h);
    if (s != NATS_OK) return nats_error("cannot set up the NATS options", s);

    s = natsConnection_Connect(&h.connection, h.options);
    if (s != NATS_OK) return nats_error("cannot connect to NATS at " + nats::servers_text(config.nats_url), s);

    // The stream's management (ensure_stream) goes through nats.c's JetStream context.
    jsOptions js_options;
    jsOptions_Init(&js_options);
    js_options.Wait = config.ack_timeout_ms;
    s = natsConnection_JetStream(&h.js, h.connection, &js_options);
    if (s != NATS_OK) return nats_error("cannot use JetStream on " + nats::connected_url(h.connection), s);

    // The acks: one subscription on a fresh inbox; its callback runs on nats.c's thread.
    natsInbox* inbox = nullptr;
    s = natsInbox_Create(&inbox);
    if (s == NATS_OK) {
        h.inbox = inbox;
        natsInbox_Destroy(inbox);
        s = natsConnection_Subscribe(&h.acks, h.connection, (h.inbox + ".*").c_str(), &JetStream::on_ack, self.get());
    }
    if (s == NATS_OK) s = natsSubscription_SetPendingLimits(h.acks, -1, -1);  // never drop an ack
    if (s == NATS_OK)
        s = natsSubscription_SetOnCompleteCB(
            h.acks,
            [](void* closure) { static_cast<Handles*>(closure)->finished(&Handles::acks_done); },
            &h);
    if (s != NATS_OK) return nats_error("cannot subscribe to JetStream's acknowledgements", s);
    return self;
}

base::Status JetStream::ensure_stream(std::vector<std::string>& warnings) {
    const std::string wildcard = config_.subject_prefix + ".>";
    jsStreamInfo* info = nullptr;
    jsErrCode code = static_cast<jsErrCode>(0);
    natsStatus s = js_GetStreamInfo(&info, handles_->js, config_.stream.c_str(), nullptr, &code);
    if (s == NATS_OK) {
        // (A stream's replication changes only by an operator's edit: a forwarder that
        // scaled it down would drop copies someone else wanted.)
        const int64_t replicas = std::max<int64_t>(info->Config->Replicas, 1);
        if (replicas != static_cast<int64_t>(config_.replicas))
            warnings.push_back("stream " + config_.stream + " has " + std::to_string(replicas) +
                               " replica(s), not Replicas (" + std::to_string(config_.replicas) +
                               "): the forwarder does not change an existing stream (nats stream edit " +
                               config_.stream + " --replicas " + std::to_string(config_.replicas) + " does)");
        const int64_t window_s = info->Config->Duplicates / kNanosPerSecond;
        if (window_s < static_cast<int64_t>(config_.duplicate_window_seconds))
            warnings.push_back("stream " + config_.stream + " de-duplicates over " + std::to_string(window_s) +
                               " s, less than DuplicateWindowSeconds (" +
                               std::to_string(config_.duplicate_window_seconds) +
                               " s): a record replayed after a longer outage of the forwarder is stored twice");
        bool covered = false;
        for (int i = 0; i < info->Config->SubjectsLen; ++i) {
            const std::string subject = info->Config->Subjects[i];
            if (subject == wildcard || subject == ">" ||
                (subject.size() >= 2 && subject.compare(subject.size() - 2, 2, ".>") == 0 &&
                 wildcard.rfind(subject.substr(0, subject.size() - 1), 0) == 0))
                covered = true;
        }
        if (!covered)
            warnings.push_back("stream " + config_.stream + " does not list the subjects " + wildcard +
                               ": JetStream will not store what the forwarder publishes");
        jsStreamInfo_Destroy(info);
        return {};
    }
    if (s != NATS_NOT_FOUND && code != JSStreamNotFoundErr) return nats_error("cannot look up stream " + config_.stream, s);

    jsStreamConfig stream;
    jsStreamConfig_Init(&stream);
    const char* subjects[] = {wildcard.c_str()};
    stream.Name = config_.stream.c_str();
    stream.Subjects = subjects;
    stream.SubjectsLen = 1;
    stream.Storage = js_FileStorage;
    stream.Duplicates = static_cast<int64_t>(config_.duplicate_window_seconds) * kNanosPerSecond;
    stream.Replicas = static_cast<int64_t>(config_.replicas);  // more than 1: a JetStream cluster's
    s = js_AddStream(&info, handles_->js, &stream, nullptr, &code);
    if (s != NATS_OK) return nats_error("cannot create stream " + config_.stream, s);
    jsStreamInfo_Destroy(info);
    return {};
}

void JetStream::on_ack(natsConnection*, natsSubscription*, natsMsg* msg, void* closure) {
    auto* self = static_cast<JetStream*>(closure);
    const uint64_t number = message_number(natsMsg_GetSubject(msg));
    const AckReply ack = read_ack(msg);
    natsMsg_Destroy(msg);
    if (number == 0) return;  // not an ack of ours
    if (ack.ok) {
        self->window_.acked(number, ack.duplicate);
    } else {
        self->window_.failed(ack.error);
        if (self->on_failure_) self->on_failure_();
    }
}

base::Status JetStream::publish(const char* subject, const char* msg_id, std::span<const Header> headers,
                                std::span<const uint8_t> body, uint32_t records) {
    using namespace std::chrono;
    const auto give_up = AckWindow::Clock::now() + milliseconds(config_.ack_timeout_ms);
    if (!window_.wait_for_room(config_.max_pending_acks, give_up)) {
        if (window_.fail_if_stalled(milliseconds(config_.ack_timeout_ms)) && on_failure_) on_failure_();
        return base::Error{EIO, window_.failure().value_or("JetStream acknowledges nothing")};
    }
    const uint64_t number = window_.reserve(records);
    char reply[96];
    const int n = std::snprintf(reply, sizeof reply, "%s.%llu", handles_->inbox.c_str(),
                                static_cast<unsigned long long>(number));
    if (n <= 0 || static_cast<size_t>(n) >= sizeof reply) {
        window_.cancel();
        return base::Error{EINVAL, "the reply inbox " + handles_->inbox + " is too long"};
    }
    natsMsg* msg = nullptr;
    natsStatus s = natsMsg_Create(&msg, subject, reply, reinterpret_cast<const char*>(body.data()),
                                  static_cast<int>(body.size()));
    if (s == NATS_OK) s = natsMsgHeader_Set(msg, "Nats-Msg-Id", msg_id);
    for (const Header& h : headers) {
        if (s == NATS_OK) s = natsMsgHeader_Set(msg, h.key, h.value);
    }
    // The connection copies the message into its buffer: it is ours to free either way.
    if (s == NATS_OK) s = natsConnection_PublishMsg(handles_->connection, msg);
    natsMsg_Destroy(msg);
    if (s != NATS_OK) {
        window_.cancel();
        return nats_error("cannot publish to " + std::string(subject), s);
    }
    return {};
}

int64_t JetStream::max_payload() const { return natsConnection_GetMaxPayload(handles_->connection); }

base::Status JetStream::complete(int64_t timeout_ms) {
    if (const natsStatus s = natsConnection_FlushTimeout(handles_->connection, timeout_ms); s != NATS_OK)
        return nats_error("cannot flush the connection to NATS", s);
    if (!window_.wait_drained(AckWindow::Clock::now() + std::chrono::milliseconds(timeout_ms)))
        return base::Error{EIO, "acknowledgements did not all arrive: " +
                                    window_.failure().value_or("none within " + std::to_string(timeout_ms) + " ms")};
    return {};
}

}  // namespace eventd::forward
