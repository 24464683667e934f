#include "forward/jetstream.hpp"

#include <nats/nats.h>

#include "nats/client.hpp"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>

namespace eventd::forward {
namespace {

using nats::nats_error;

constexpr int64_t kNanosPerSecond = 1'000'000'000;

}  // namespace

// nats.c delivers connection events on threads of its own, also after natsConnection_Close
// returned: the handles are released only once the closed callback — the last one — has run,
// and `closing` keeps the disconnect that Close itself causes from being reported as a failure.
struct JetStream::Handles {
    natsOptions* options = nullptr;
    natsConnection* connection = nullptr;
    jsCtx* js = nullptr;
    std::atomic<bool> closing{false};
    std::mutex mutex;
    std::condition_variable closed_cv;
    bool closed = false;  // guarded by mutex

    ~Handles() {
        closing = true;
        if (connection) {
            natsConnection_Close(connection);
            std::unique_lock lock(mutex);
            closed_cv.wait_for(lock, std::chrono::seconds(10), [this] { return closed; });
        }
        if (js) jsCtx_Destroy(js);
        if (connection) natsConnection_Destroy(connection);
        if (options) natsOptions_Destroy(options);
    }
};

JetStream::JetStream(const ForwardConfig& config, AckWindow& window, std::function<void()> on_failure)
    : config_(config), window_(window), on_failure_(std::move(on_failure)), handles_(std::make_unique<Handles>()) {}

JetStream::~JetStream() = default;

kmes::Result<std::unique_ptr<JetStream>> JetStream::connect(const ForwardConfig& config, AckWindow& window,
                                                           std::function<void()> on_failure) {
    std::unique_ptr<JetStream> self(new JetStream(config, window, std::move(on_failure)));
    Handles& h = *self->handles_;
    natsStatus s = natsOptions_Create(&h.options);
    if (s == NATS_OK) s = natsOptions_SetURL(h.options, config.nats_url.c_str());
    if (s == NATS_OK) s = natsOptions_SetName(h.options, ("eventd-forward " + config.host_name).c_str());
    if (s == NATS_OK) s = natsOptions_SetTimeout(h.options, config.ack_timeout_ms);
    if (s == NATS_OK) s = natsOptions_SetAllowReconnect(h.options, false);  // a new session instead
    if (s != NATS_OK) return nats_error("cannot set up the NATS options", s);
    if (auto st = nats::apply_auth(h.options, config.auth); !st) return st.error();
    // A lost connection fails the session: its pending acks can never arrive.
    s = natsOptions_SetDisconnectedCB(
        h.options,
        [](natsConnection*, void* closure) {
            auto* self = static_cast<JetStream*>(closure);
            if (self->handles_->closing) return;  // our own Close
            self->window_.failed(0, "the connection to NATS was lost");
            if (self->on_failure_) self->on_failure_();
        },
        self.get());
    if (s == NATS_OK)
        s = natsOptions_SetClosedCB(
            h.options,
            [](natsConnection*, void* closure) {
                Handles& handles = *static_cast<Handles*>(closure);
                std::lock_guard lock(handles.mutex);
                handles.closed = true;
                handles.closed_cv.notify_all();
            },
            &h);
    if (s != NATS_OK) return nats_error("cannot set up the NATS options", s);

    s = natsConnection_Connect(&h.connection, h.options);
    if (s != NATS_OK) return nats_error("cannot connect to NATS at " + config.nats_url, s);

    jsOptions js_options;
    jsOptions_Init(&js_options);
    js_options.Wait = config.ack_timeout_ms;
    js_options.PublishAsync.MaxPending = config.max_pending_acks;
    js_options.PublishAsync.StallWait = config.ack_timeout_ms;
    // nats.c thread: count the ack (or the failure) and free the message.
    js_options.PublishAsync.AckHandler = [](jsCtx*, natsMsg* msg, jsPubAck* pa, jsPubAckErr* pae, void* closure) {
        auto* self = static_cast<JetStream*>(closure);
        const auto token = reinterpret_cast<uintptr_t>(msg);
        if (pa != nullptr) {
            self->window_.acked(token, pa->Duplicate);
        } else {
            std::string why = "JetStream refused a message";
            if (pae != nullptr) {
                why += ": " + std::string(natsStatus_GetText(pae->Err));
                if (pae->ErrText) why += " (" + std::string(pae->ErrText) + ")";
            }
            self->window_.failed(token, why);
            if (self->on_failure_) self->on_failure_();
        }
        natsMsg_Destroy(msg);
    };
    js_options.PublishAsync.AckHandlerClosure = self.get();
    s = natsConnection_JetStream(&h.js, h.connection, &js_options);
    if (s != NATS_OK) return nats_error("cannot use JetStream on " + config.nats_url, s);
    return self;
}

kmes::Status JetStream::ensure_stream(std::vector<std::string>& warnings) {
    const std::string wildcard = config_.subject_prefix + ".>";
    jsStreamInfo* info = nullptr;
    jsErrCode code = static_cast<jsErrCode>(0);
    natsStatus s = js_GetStreamInfo(&info, handles_->js, config_.stream.c_str(), nullptr, &code);
    if (s == NATS_OK) {
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
    s = js_AddStream(&info, handles_->js, &stream, nullptr, &code);
    if (s != NATS_OK) return nats_error("cannot create stream " + config_.stream, s);
    jsStreamInfo_Destroy(info);
    return {};
}

kmes::Status JetStream::publish(const std::string& subject, const std::string& msg_id,
                                const std::vector<Header>& headers, std::span<const uint8_t> body) {
    natsMsg* msg = nullptr;
    natsStatus s = natsMsg_Create(&msg, subject.c_str(), nullptr, reinterpret_cast<const char*>(body.data()),
                                  static_cast<int>(body.size()));
    if (s != NATS_OK) return nats_error("cannot build a message", s);
    for (const Header& h : headers) {
        if (s == NATS_OK) s = natsMsgHeader_Set(msg, h.key, h.value.c_str());
    }
    if (s != NATS_OK) {
        natsMsg_Destroy(msg);
        return nats_error("cannot build a message", s);
    }
    jsPubOptions options;
    jsPubOptions_Init(&options);
    options.MsgId = msg_id.c_str();
    options.MaxWait = config_.ack_timeout_ms;
    // Numbered before it is handed over: its ack may arrive before js_PublishMsgAsync returns.
    const auto token = reinterpret_cast<uintptr_t>(msg);
    window_.reserve(token);
    natsMsg* handed = msg;
    s = js_PublishMsgAsync(handles_->js, &handed, &options);
    if (s != NATS_OK) {
        window_.cancel(token);
        if (handed) natsMsg_Destroy(handed);  // still ours when the library did not take it
        return nats_error("cannot publish to " + subject, s);
    }
    return {};
}

kmes::Status JetStream::complete(int64_t timeout_ms) {
    jsPubOptions options;
    jsPubOptions_Init(&options);
    options.MaxWait = timeout_ms;
    const natsStatus s = js_PublishAsyncComplete(handles_->js, &options);
    if (s != NATS_OK) return nats_error("acknowledgements did not all arrive", s);
    return {};
}

}  // namespace eventd::forward
