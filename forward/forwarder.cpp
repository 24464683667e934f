// eventd-forward's sessions and backoff; see forwarder.hpp for the flow.
#include "forward/forwarder.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "base/display_escape.hpp"
#include "base/durable_file.hpp"
#include "base/jittered_backoff.hpp"
#include "base/sync_point.hpp"
#include "base/thread_boundary.hpp"
#include "protocol/client.hpp"
#include "protocol/wire.hpp"
#include "base/interrupt.hpp"
#include "protocol/reply.hpp"
#include "forward/ack_window.hpp"
#include "forward/jetstream.hpp"
#include "forward/packer.hpp"
#include "forward/record_id.hpp"
#include "forward/status.hpp"

namespace eventd::forward {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

// The persisted cursor: "" (from the oldest record) before the first one was saved.
base::Result<std::string> load_cursor(const fs::path& file) {
    std::ifstream in(file);
    if (!in) {
        if (errno == ENOENT) return std::string();
        return base::errno_error("cannot read " + file.string());
    }
    std::string cursor;
    std::getline(in, cursor);
    return cursor;
}

// What outlives one session: the persisted cursor and the status.
class State {
public:
    State(const ForwardConfig& config, std::string cursor) : config_(config), cursor_(std::move(cursor)) {
        status_.pid = static_cast<int>(::getpid());
    }

    const ForwardConfig& config() const { return config_; }
    std::string cursor() const {
        std::lock_guard lock(mutex_);
        return cursor_;
    }

    // Persist `point` (fsync'd, atomic rename): from now on a new session resumes there.
    base::Status save(const PersistPoint& point) {
        if (auto st = base::write_file_atomically(fs::path(config_.state_directory) / kCursorFileName,
                                                  point.cursor + "\n");
            !st)
            return st;
        std::lock_guard lock(mutex_);
        cursor_ = point.cursor;
        status_.cursor_saved_ns = wall_ns();
        // The newest over every saved point: a frame's records are in store order, and a later
        // frame may hold only older events (another shard's).
        status_.last_acked_timestamp_ns = std::max(status_.last_acked_timestamp_ns, point.newest_event_ns);
        return {};
    }

    template <class F>
    void update(F&& f) {
        std::lock_guard lock(mutex_);
        f(status_);
    }

    void set_state(const std::string& state, const std::string& error = {}) {
        update([&](ForwardStatus& s) {
            s.state = state;
            if (!error.empty()) {
                s.last_error = error;
                s.last_error_ns = wall_ns();
            }
        });
        // systemd hears of the transitions between forwarding and not (the status file has
        // every retry): sd_notify blocks once its datagram queue is full, and a NATS outage
        // retries many times.
        const bool forwarding = state == "forwarding";
        if (forwarding != notified_forwarding_ || state == "stopped") {
            notified_forwarding_ = forwarding;
            sd_notifyf(0, "STATUS=%s%s%s", state.c_str(), error.empty() ? "" : ": ", error.c_str());
        }
        (void)write_status_now();  // a failure is logged there; the state itself has changed
    }

    // Rewrites the status file; a failure is logged (and returned for the start-up check).
    base::Status write_status_now() {
        ForwardStatus copy;
        {
            std::lock_guard lock(mutex_);
            status_.updated_ns = wall_ns();
            copy = status_;
        }
        auto st = write_status(config_.state_directory, copy);
        if (!st) spdlog::warn("cannot write the status file: {}", st.error().message);
        return st;
    }

private:
    const ForwardConfig& config_;
    mutable std::mutex mutex_;
    std::string cursor_;
    ForwardStatus status_;
    bool notified_forwarding_ = false;
};

// The thread that persists the cursor as acks come in, rewrites the status every second, and
// fails the session when acks stop coming for AckTimeoutMs (`on_stall` wakes the reader).
class Persister {
public:
    Persister(State& state, AckWindow& window, WindowCounters base, std::function<void()> on_stall)
        : state_(state), window_(window), base_(base), on_stall_(std::move(on_stall)), thread_([this] {
              // An unexpected exception fails the session (the reader is woken and sees the
              // failure); the cursor stays where it was last saved, and the next session
              // resumes from there.
              base::run_guarded("cursor persister", [this] { run(); }, [this](const std::string& why) {
                  window_.failed(why);
                  if (on_stall_) on_stall_();
              });
          }) {}
    ~Persister() { stop(); }

    // The last persistable cursor saved; the thread ends.
    void stop() {
        if (!thread_.joinable()) return;
        stopping_ = true;
        thread_.join();
    }
    const std::optional<std::string>& save_error() const { return save_error_; }

private:
    void run() {
        std::optional<PersistPoint> saved;
        auto next_status = Clock::now();
        for (;;) {
            const bool last = stopping_.load();
            KMES_SYNC_POINT("Persister::run:cycle");
            auto point = window_.wait_persistable(saved, Clock::now() + std::chrono::milliseconds(200));
            if (point && point != saved) {
                if (auto st = state_.save(*point); !st) {
                    save_error_ = st.error().message;
                    spdlog::error("cannot save the cursor: {}", st.error().message);
                } else {
                    saved = point;
                }
            }
            if (window_.fail_if_stalled(std::chrono::milliseconds(state_.config().ack_timeout_ms)) && on_stall_)
                on_stall_();
            if (last || Clock::now() >= next_status) {
                const WindowCounters c = window_.counters();
                state_.update([&](ForwardStatus& s) {
                    s.published = base_.published + c.published;
                    s.acked = base_.acked + c.acked;
                    s.duplicates = base_.duplicates + c.duplicates;
                    s.messages = base_.messages + c.messages;
                    s.pending = c.pending;
                });
                (void)state_.write_status_now();  // logged there; retried in a second
                next_status = Clock::now() + std::chrono::seconds(1);
            }
            if (last) return;
        }
    }

    State& state_;
    AckWindow& window_;
    WindowCounters base_;
    std::function<void()> on_stall_;
    std::atomic<bool> stopping_{false};
    std::optional<std::string> save_error_;
    std::thread thread_;
};

// Every 5 s, on a connection of its own: how many matching records eventd stores after the
// saved cursor (`<Query> COUNT` with `after`) — the lag in records of --status. A failed probe
// leaves the last count (the sessions report why eventd cannot be reached).
class LagProbe {
public:
    // An unexpected exception ends the probing (logged): the lag keeps its last count.
    explicit LagProbe(State& state)
        : state_(state), thread_([this] { base::run_guarded("lag probe", [this] { run(); }, [](const std::string&) {}); }) {}
    ~LagProbe() {
        {
            std::lock_guard lock(mutex_);
            stopping_ = true;
        }
        wake_.notify_all();
        thread_.join();
    }

private:
    void run() {
        std::unique_lock lock(mutex_);
        while (!stopping_) {
            lock.unlock();
            probe();
            lock.lock();
            wake_.wait_for(lock, std::chrono::seconds(5), [this] { return stopping_; });
        }
    }

    void probe() {
        const ForwardConfig& config = state_.config();
        auto conn = protocol::Connection::open(config.eventd_socket_path);
        if (!conn) return;
        const auto request = protocol::encode_request({counting_query(config.query), state_.cursor(), false});
        if (auto sent = conn->send_frame(request); !sent) return;
        std::vector<uint8_t> frame;
        for (;;) {
            auto got = conn->read_frame(frame);
            if (!got || *got != protocol::ReadResult::frame) return;
            auto reply = protocol::parse_reply(frame);
            if (!reply || reply->status == protocol::ReplyStatus::error) return;
            for (const auto& record : reply->records) {
                const json r = json::from_msgpack(record.begin(), record.end(), true, false);
                if (r.is_object() && r.contains("count") && r["count"].is_number_unsigned()) {
                    const auto n = r["count"].get<int64_t>();
                    state_.update([&](ForwardStatus& s) {
                        s.backlog = n;
                        s.backlog_ns = wall_ns();
                    });
                }
            }
            if (reply->status == protocol::ReplyStatus::end) return;
        }
    }

    State& state_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stopping_ = false;  // guarded by mutex_
    std::thread thread_;     // last: starts once the members above exist
};

// A synthetic.forward_gap record: eventd could not deliver `lost` records after the cursor the
// session resumed from (retention deleted them). Its id derives from that cursor, so a replay of
// the same resumption publishes it once.
std::vector<uint8_t> gap_record(const std::string& host, const std::string& resumed_after, const protocol::Reply& gap) {
    json record = {{"event_type", "synthetic.forward_gap"},
                   {"timestamp", wall_ns()},
                   {"boot_id", "00000000-0000-0000-0000-000000000000"},
                   {"host", host},
                   {"lost", gap.lost ? json(*gap.lost) : json(nullptr)},
                   {"detail", gap.detail},
                   {"resumed_after", resumed_after}};
    return json::to_msgpack(record);
}

enum class SessionEnd { stopped, failed };

class Session final : public PackerSink {
public:
    Session(State& state, WindowCounters base) : state_(state), config_(state.config()), base_(base) {}

    // Runs until a signal (stopped) or a failure (the error says why). `made_progress`: some
    // cursor was persisted (the backoff starts over).
    base::Result<SessionEnd> run(bool& made_progress, WindowCounters& totals) {
        const std::string resumed_after = state_.cursor();
        state_.update([](ForwardStatus& s) { s.caught_up = false; });
        state_.set_state("connecting");
        std::atomic<int> eventd_fd{-1};
        auto wake_reader = [&eventd_fd] {
            const int fd = eventd_fd.load();
            if (fd >= 0) ::shutdown(fd, SHUT_RDWR);  // the blocked read_frame returns
        };
        auto js = JetStream::connect(config_, window_, wake_reader);
        if (!js) return js.error();
        js_ = js->get();
        std::vector<std::string> warnings;
        if (auto st = (*js)->ensure_stream(warnings); !st) return st.error();
        for (const auto& w : warnings) spdlog::warn("{}", w);
        auto conn = protocol::Connection::open(config_.eventd_socket_path);
        if (!conn) return conn.error();
        eventd_fd = conn->fd();
        // The connection closes before the JetStream handles (declared later, destroyed
        // first); a late failure callback must not shut down a descriptor number reused since.
        struct ForgetFd {
            std::atomic<int>& fd;
            ~ForgetFd() { fd = -1; }
        } forget_fd{eventd_fd};

        Persister persister(state_, window_, base_, wake_reader);
        struct Finish {
            Persister& p;
            AckWindow& w;
            WindowCounters& totals;
            ~Finish() {
                p.stop();
                totals = w.counters();
            }
        } finish{persister, window_, totals};

        const auto body = protocol::encode_request({streaming_query(config_.query), resumed_after, true});
        if (auto sent = conn->send_frame(body); !sent) return sent.error();
        state_.set_state("forwarding");

        max_payload_ = (*js)->max_payload();
        Packer packer(pack_limits(max_payload_), *this);
        std::vector<uint8_t> frame;
        for (;;) {
            // The next frame, or the moment the oldest open message is due (MaxMessageDelayMs).
            if (!frame_or_due(conn->fd(), packer.next_due())) {
                if (auto st = packer.flush_due(Packer::Clock::now()); !st) return st.error();
                continue;
            }
            auto got = conn->read_frame(frame);
            if (auto failure = window_.failure()) return base::Error{EIO, *failure};
            if (!got) return base::Error{got.error().code, "eventd: " + got.error().message};
            if (*got == protocol::ReadResult::interrupted) {
                // What is packed goes out, then the acks of what was published may arrive, so
                // the cursor saved is the newest.
                if (auto st = packer.flush_all(); !st) return st.error();
                if (auto st = (*js)->complete(5000); !st) spdlog::warn("{}", st.error().message);
                made_progress = true;
                return SessionEnd::stopped;
            }
            if (*got == protocol::ReadResult::closed) return base::Error{EPIPE, "eventd closed the stream"};
            auto reply = protocol::parse_reply(frame);
            if (!reply) return reply.error();
            if (reply->status == protocol::ReplyStatus::error)
                return base::Error{EPROTO, "eventd: " + reply->error};
            if (reply->status == protocol::ReplyStatus::gap) {
                spdlog::warn("{} records after the saved cursor are no longer in eventd ({}); publishing "
                             "synthetic.forward_gap",
                             reply->lost ? std::to_string(*reply->lost) : "an unknown number of", reply->detail);
                const auto record = gap_record(config_.host_name, resumed_after, *reply);
                if (auto st = publish_gap(record, "gap:" + stable_hash(resumed_after)); !st)
                    return st.error();
                state_.update([](ForwardStatus& s) { ++s.gaps; });
            }
            const auto now = Packer::Clock::now();
            for (const auto& record : reply->records) {
                auto keys = record_keys(record);
                if (!keys) return keys.error();
                newest_ = std::max(newest_, keys->timestamp);
                if (auto st = packer.add(*keys, record, now); !st) return st.error();
            }
            if (reply->cursor) packer.cursor(*reply->cursor, newest_);
            if (reply->status == protocol::ReplyStatus::watch) {
                state_.update([](ForwardStatus& s) { s.caught_up = true; });
                spdlog::info("caught up with eventd: forwarding live");
            }
            if (window_.persistable()) made_progress = true;
        }
    }

private:
    // PackerSink: a packed message (or one record) to JetStream; a frame's cursor, once every
    // record before it is published, to the ack window.
    base::Status publish(const PackedMessage& m) override {
        // Issue 40: a record the server must refuse (larger than its max_payload: only a record
        // alone can be, packing stays under it) would be retried for ever, every later record
        // stuck behind it. It is published as its synthetic.forward_rejected instead.
        if (m.records == 1 && max_payload_ > kHeaderRoom && int64_t(m.body.size()) > max_payload_ - kHeaderRoom)
            return publish_rejected(m);
        // Records come in runs of one type: the subject is escaped once per run.
        if (m.event_type != subject_type_) {
            subject_type_ = m.event_type;
            subject_ = subject_for(config_.subject_prefix, config_.host_name, m.event_type);
        }
        const std::string records = std::to_string(m.records);
        const JetStream::Header headers[] = {{"Eventd-Host", config_.host_name.c_str()},
                                             {"Eventd-Boot", m.boot_id.c_str()},
                                             {"Eventd-Records", records.c_str()}};
        return js_->publish(subject_.c_str(), m.msg_id.c_str(), headers, m.body, m.records);
    }
    void checkpoint(const PersistPoint& point) override { window_.checkpoint(point.cursor, point.newest_event_ns); }

    // The record's place kept, its content not (docs/FORWARD.md "Records too large"): its keys
    // (boot, timestamp, cpu, sequence: the collector accounts for its sequence, so the fleet's
    // audit stays exact), its type, its size and the server's limit, under the same message id.
    base::Status publish_rejected(const PackedMessage& m) {
        json record = json::from_msgpack(m.body, true, false);
        if (record.is_array() && record.size() == 1) record = record.at(0);
        if (!record.is_object()) return base::Error{EPROTO, "a record too large to publish is not a msgpack map"};
        json out = json::object();
        for (const char* key : {"boot_id", "timestamp", "cpu_id", "sequence"})
            if (record.contains(key)) out[key] = record[key];
        out["event_type"] = "synthetic.forward_rejected";
        out["rejected_event_type"] = m.event_type;
        out["rejected_bytes"] = m.body.size();
        out["max_payload"] = max_payload_;
        out["reason"] = "larger than the NATS server's max_payload";
        const std::vector<uint8_t> body = json::to_msgpack(out);
        const JetStream::Header headers[] = {{"Eventd-Host", config_.host_name.c_str()},
                                             {"Eventd-Boot", m.boot_id.c_str()},
                                             {"Eventd-Records", "1"}};
        spdlog::warn("record {} ({}, {} bytes) is larger than the NATS server takes ({} bytes): published as "
                     "synthetic.forward_rejected",
                     m.msg_id, base::display_escaped(m.event_type), m.body.size(), max_payload_);
        state_.update([&](ForwardStatus& s) {
            ++s.rejected;
            s.last_rejected = m.event_type + " " + m.msg_id;
        });
        return js_->publish(subject_for(config_.subject_prefix, config_.host_name, "synthetic.forward_rejected").c_str(),
                            m.msg_id.c_str(), headers, body, 1);
    }

    base::Status publish_gap(const std::vector<uint8_t>& record, const std::string& id) {
        const JetStream::Header headers[] = {{"Eventd-Host", config_.host_name.c_str()}};
        return js_->publish(subject_for(config_.subject_prefix, config_.host_name, "synthetic.forward_gap").c_str(),
                            id.c_str(), headers, record);
    }

    // The configured packing, its byte limit kept under the server's max_payload (headers and
    // the array header need room too).
    PackLimits pack_limits(int64_t max_payload) {
        PackLimits limits{config_.max_records_per_message, config_.max_message_bytes,
                          std::chrono::milliseconds(config_.max_message_delay_ms)};
        if (max_payload > 2 * kHeaderRoom && limits.max_bytes > max_payload - kHeaderRoom) {
            limits.max_bytes = static_cast<uint32_t>(max_payload - kHeaderRoom);
            if (!warned_max_payload_)
                spdlog::warn("MaxMessageBytes {} is more than the NATS server accepts (max_payload {}): packing "
                             "up to {} bytes",
                             config_.max_message_bytes, max_payload, limits.max_bytes);
            warned_max_payload_ = true;
        }
        return limits;
    }
    static constexpr int64_t kHeaderRoom = 1024;

    // Waits until eventd's socket (or Ctrl-C) has something to read — true — or `due` passed.
    static bool frame_or_due(int fd, Packer::Clock::time_point due) {
        if (due == Packer::Clock::time_point::max()) return true;  // nothing packed: read_frame waits
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(due - Packer::Clock::now()).count();
        if (left <= 0) return false;
        pollfd fds[2] = {{fd, POLLIN, 0}, {base::interrupt_fd(), POLLIN, 0}};
        return ::poll(fds, 2, static_cast<int>(std::min<int64_t>(left, 60000))) != 0;  // -1 (EINTR): read
    }

    State& state_;
    const ForwardConfig& config_;
    WindowCounters base_;
    AckWindow window_;
    JetStream* js_ = nullptr;
    std::string subject_type_;  // the event type subject_ was made for
    std::string subject_;
    bool warned_max_payload_ = false;
    int64_t max_payload_ = 0;  // the server's, as of this session
    // The newest event time read so far: a checkpoint covers every record before it, and the
    // ack window may pass several checkpoints at once.
    int64_t newest_ = 0;
};

}  // namespace

base::Status run_forwarder(const ForwardConfig& config) {
    std::error_code ec;
    fs::create_directories(config.state_directory, ec);
    if (ec) return base::Error{ec.value(), "cannot create StateDirectory " + config.state_directory + ": " + ec.message()};
    auto cursor = load_cursor(fs::path(config.state_directory) / kCursorFileName);
    if (!cursor) return cursor.error();
    State state(config, *cursor);
    if (auto st = state.write_status_now(); !st)
        return base::Error{st.error().code, "StateDirectory " + config.state_directory + " is not writable: " +
                                                st.error().message};
    sd_notify(0, "READY=1");
    spdlog::info("forwarding {} from {} to {} (stream {}, subjects {}.{}.>){}", config.query,
                 config.eventd_socket_path, config.nats_url, config.stream, config.subject_prefix,
                 escape_token(config.host_name), cursor->empty() ? ", from the oldest record" : ", resuming");

    LagProbe lag_probe(state);
    base::JitteredBackoff backoff(std::chrono::milliseconds(config.max_backoff_ms));
    WindowCounters totals;
    for (bool first = true;; first = false) {
        if (!first) state.update([](ForwardStatus& s) { ++s.reconnects; });
        bool progress = false;
        WindowCounters session_counters;
        Session session(state, totals);
        auto end = session.run(progress, session_counters);
        totals.published += session_counters.published;
        totals.acked += session_counters.acked;
        totals.duplicates += session_counters.duplicates;
        totals.messages += session_counters.messages;
        if (end && *end == SessionEnd::stopped) break;
        if (base::interrupted()) break;
        const std::string why = end ? "the session ended" : end.error().message;
        if (progress) backoff.reset();
        const auto wait = backoff.next();
        spdlog::warn("{}; retrying in {} ms", why, wait.count());
        state.set_state("backing off", why);
        pollfd p{base::interrupt_fd(), POLLIN, 0};
        ::poll(&p, 1, static_cast<int>(wait.count()));
        if (base::interrupted()) break;
    }
    sd_notify(0, "STOPPING=1");
    state.set_state("stopped");
    return {};
}

}  // namespace eventd::forward
