#include "eventd/server/session.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>

#include <spdlog/spdlog.h>

#include "base/display_escape.hpp"

#include "eventd/query_language/errors.hpp"
#include "eventd/query/executor.hpp"
#include "eventd/query/live_feed.hpp"
#include "eventd/query/resume.hpp"
#include "store/store_identity.hpp"
#include "eventd/query_language/parser.hpp"
#include "eventd/server/channel.hpp"
#include "eventd/server/record_batcher.hpp"
#include "protocol/wire.hpp"
#include "base/sync_point.hpp"

namespace eventd::server {
namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

constexpr auto kFinalFrameGrace = std::chrono::seconds(1);  // for the closing error frame
constexpr auto kCheckpointInterval = std::chrono::seconds(5);
// The start of the error frame that ends a stream the reloaded policy refuses.
constexpr const char* kPolicyChangedText = "stream ended: the access policy changed and refuses this query now: ";

int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

class Session {
public:
    Session(ServerShared& shared, int fd, const access::Caller& caller, Admissions::Ticket& ticket)
        : shared_(shared),
          channel_(fd),
          caller_(caller),
          ticket_(ticket),
          limits_(shared.limits()),
          deadline_(Clock::now() + std::chrono::milliseconds(limits_.query_timeout_ms)),
          batcher_(limits_.query_response_target_bytes, &*shared.cursor_key) {}

    void run(const protocol::Request& request);

private:
    // One function per kind of query: STATUS, EVENTS INDEX, and EVENTS — whose initial phase
    // is a plain query, a catch-up after a cursor, or the count of records after one, and
    // whose stream then follows live.
    void run_status();
    void run_verify(const std::string& key);
    void run_index(const query::Query& q);
    void run_events(const query::Query& q, const protocol::Request& request);
    // run_events' admission: the caller's view (and the field counting of §8.6.5), a resumed
    // query's cursor, a streaming slot. False when the client was told why not.
    bool admit_events(const query::Query& q, const protocol::Request& request, access::CallerAccess& access,
                      const base::Result<store::StoreId>& store_id, std::optional<store::StorePosition>& from);
    void run_count_after(const query::Query& q, query::ExecutionContext& ctx, const store::StoreId& store,
                         const std::optional<store::StorePosition>& from);
    base::Result<query::StreamStart> run_catch_up(const query::Query& q, query::ExecutionContext& ctx,
                                                  const store::StoreId& store,
                                                  const std::optional<store::StorePosition>& from, bool allow_gap);
    base::Result<query::StreamStart> run_query(const query::Query& q, query::ExecutionContext& ctx);
    // The initial phase failed: the client hears why (unless it cannot hear anything any more),
    // counted as a timeout or an error (a shutdown is neither).
    void report_initial_failure(const base::Error& error);
    bool finish_initial_frames();
    void follow(const query::Query& q, query::StreamStart start, access::CallerAccess& access, StreamWake& wake,
                uint64_t generation);
    // A stream's live phase: when the position moved past what the last frame said and no
    // cursor was sent for kCheckpointInterval, an ok frame without records tells the client the
    // position it has reached (so that rows that never matched are not counted as lost when
    // retention deletes them before the next record).
    bool send_checkpoint_if_due();

    // Initial phase: blocking sends bounded by the deadline.
    base::Status send_initial(const std::vector<uint8_t>& frame);
    base::Status drain_batcher_initial();
    // The last frame of a session (end or error): a short grace, none while shutting down.
    void send_final(const std::vector<uint8_t>& frame);
    void fail(const std::string& message) { send_final(protocol::error_frame(message)); }
    // Live phase: never blocks; false when the stream is over (dropped or client gone).
    bool send_live(const std::vector<uint8_t>& frame);

    ServerShared& shared_;
    Channel channel_;
    const access::Caller& caller_;
    Admissions::Ticket& ticket_;
    ServerLimits limits_;
    Clock::time_point deadline_;
    RecordBatcher batcher_;
    bool client_gone_ = false;                  // a send failed: nothing more can be said
    std::optional<store::StorePosition> told_;  // the position of the last cursor sent
    Clock::time_point told_at_{};
    bool torn_ = false;  // a frame went out in part: not even an error frame
    bool send_timed_out_ = false;
};

base::Status Session::send_initial(const std::vector<uint8_t>& frame) {
    const Sent r = channel_.send_until(frame, deadline_);
    if (r == Sent::ok) return {};
    // The deadline passed while the client read too slowly: if no part of the frame went out,
    // the timeout error can still follow; a cut frame or a gone client leaves nothing to say.
    send_timed_out_ = r == Sent::timed_out || r == Sent::torn;
    torn_ = r == Sent::torn;
    client_gone_ = r == Sent::closed || r == Sent::would_block;
    return base::Error{EPIPE, "the client stopped reading or left"};
}

base::Status Session::drain_batcher_initial() {
    while (batcher_.has_frame())
        if (base::Status s = send_initial(batcher_.next_frame()); !s) return s;
    return {};
}

void Session::send_final(const std::vector<uint8_t>& frame) {
    if (client_gone_ || torn_) return;
    if (shared_.stopping.load()) {
        channel_.send_now(frame);
        return;
    }
    channel_.send_until(frame, Clock::now() + kFinalFrameGrace);
}

bool Session::send_live(const std::vector<uint8_t>& frame) {
    switch (channel_.send_now(frame)) {
        case Sent::ok:
            return true;
        case Sent::would_block:
            // §8.7.6: the send buffer is full — end the stream at once, with an error frame if
            // the socket still takes one.
            shared_.counters.dropped_streams.fetch_add(1, std::memory_order_relaxed);
            channel_.send_now(protocol::error_frame("stream dropped: client is not reading fast enough"));
            shared_.caller_log.info(caller_.uid,
                                    "stream of " + caller_.user_name() + " dropped: the client is not reading fast enough");
            return false;
        case Sent::torn:
            shared_.counters.dropped_streams.fetch_add(1, std::memory_order_relaxed);
            shared_.caller_log.info(caller_.uid, "stream of " + caller_.user_name() +
                                                     " dropped: the client is not reading fast enough (frame cut, "
                                                     "connection closed)");
            return false;
        default:
            return false;  // the client left
    }
}

void Session::run(const protocol::Request& request) {
    auto parsed = query::parse(request.query, now_ns());
    if (!parsed) {
        shared_.counters.errors.fetch_add(1, std::memory_order_relaxed);
        return fail(parsed.error().message);
    }
    if (parsed->mode != query::Mode::events && request.after) {
        shared_.counters.errors.fetch_add(1, std::memory_order_relaxed);
        return fail("'after' resumes EVENTS queries only");
    }
    if (parsed->mode == query::Mode::status) return run_status();
    if (parsed->mode == query::Mode::index) return run_index(*parsed);
    if (parsed->mode == query::Mode::verify) return run_verify(*parsed->verify_key);
    run_events(*parsed, request);
}

// §8.2.7: authorised against admin_sd (not the read-path policy); {status:"end"} once the
// desired set is persisted — the indexes themselves are built later, by the writers.
void Session::run_index(const query::Query& q) {
    if (!shared_.index.add) return fail("INDEX is not available in this server");
    if (base::Status s = shared_.index.add(caller_, q.index_field->name, deadline_); !s) {
        if (s.error().is_timed_out()) {
            shared_.counters.timeouts.fetch_add(1, std::memory_order_relaxed);
        } else if (!s.error().is_cancelled()) {
            shared_.counters.errors.fetch_add(1, std::memory_order_relaxed);
        }
        if (s.error().code == base::ErrorCode::access_denied)
            shared_.caller_log.info(caller_.uid, "EVENTS INDEX " + base::display_escaped(q.index_field->name) +
                                                     " refused for " + caller_.user_name() + ": not an administrator");
        return fail(s.error().message);
    }
    send_final(protocol::end_frame());
}

void Session::run_status() {
    if (!shared_.policy->get()->is_admin(caller_)) return fail("access denied: status is for administrators");
    std::vector<json> records = shared_.daemon_status ? shared_.daemon_status() : std::vector<json>{};
    records.push_back(shared_.queries_record());
    for (const json& r : records) {
        batcher_.add(r);
        if (!drain_batcher_initial()) return;
    }
    batcher_.flush();
    if (!drain_batcher_initial()) return;
    send_final(protocol::end_frame());
}

// Issue 28: the records say per file what verified and what broke (eventctl prints them as
// its offline verify does). Reading every row takes as long as it takes; the sends get the
// query's usual time from when the work is done.
void Session::run_verify(const std::string& key) {
    if (!shared_.policy->get()->is_admin(caller_)) return fail("access denied: verify is for administrators");
    if (!shared_.verify_store) return fail("VERIFY is not available in this server");
    auto records = shared_.verify_store(key);
    if (!records) return fail(records.error().message);
    deadline_ = Clock::now() + std::chrono::milliseconds(limits_.query_timeout_ms);
    for (const json& r : *records) {
        batcher_.add(r);
        if (!drain_batcher_initial()) return;
    }
    batcher_.flush();
    if (!drain_batcher_initial()) return;
    send_final(protocol::end_frame());
}

void Session::run_events(const query::Query& q, const protocol::Request& request) {
    // Generation first: a reload between the two reads only causes a needless reset later.
    const uint64_t generation = shared_.policy_generation.load();
    access::CallerAccess access(caller_, shared_.policy->get());
    // Cursors name the store (store_identity.hpp): without its id (a store eventd has not
    // started on) a stream has none, and a resumption is refused.
    const auto store_id = store::read_store_id(shared_.store_dir);
    std::optional<store::StorePosition> from;
    if (!admit_events(q, request, access, store_id, from)) return;

    // A stream subscribes before the initial query takes its snapshot: a commit after the
    // snapshot then always marks its shard (one before it only causes an empty read).
    std::shared_ptr<StreamWake> wake;
    if (q.stream) {
        auto created = StreamWake::create(shared_.signal->shard_count());
        if (!created) {  // typically out of file descriptors: this query fails, eventd goes on
            shared_.counters.errors.fetch_add(1, std::memory_order_relaxed);
            spdlog::warn("query: cannot start a stream: {}", created.error().message);
            return fail("eventd cannot start this stream now: " + created.error().message);
        }
        wake = std::move(*created);
        shared_.signal->subscribe(wake);
    }
    struct Unsubscribe {
        CommitSignal& signal;
        const StreamWake* wake;
        ~Unsubscribe() {
            if (wake) signal.unsubscribe(wake);
        }
    } unsubscribe{*shared_.signal, wake.get()};

    // Issue 40, one user's budget: a user who is not an administrator reads the store with at
    // most MaxRunningQueriesPerUser queries at once (the rest wait, within QueryTimeoutMs); the
    // slot is held until the initial result is sent, not through a stream's live phase.
    auto slot = shared_.admissions.run_slot(caller_.uid, access.policy()->is_admin(caller_), limits_, deadline_,
                                            shared_.stopping, shared_.counters);
    if (!slot) {
        if (!slot.error().is_timed_out()) return report_initial_failure(slot.error());
        return report_initial_failure(base::Error{
            base::ErrorCode::timed_out, query::timeout_text(limits_.query_timeout_ms) + ": " + slot.error().message});
    }
    std::optional<Admissions::RunSlot> running{std::move(*slot)};

    query::ExecutionContext ctx;
    ctx.store_dir = shared_.store_dir;
    ctx.access = &access;
    ctx.deadline = deadline_;
    ctx.timeout_ms = limits_.query_timeout_ms;
    ctx.cancelled = &shared_.stopping;
    ctx.group_budget_bytes = limits_.max_query_group_bytes;
    KMES_SYNC_POINT("Session::run_events:before_execute");
    if (request.after && query::is_count_after(q)) return run_count_after(q, ctx, *store_id, from);
    auto start = request.after ? run_catch_up(q, ctx, *store_id, from, request.allow_gap) : run_query(q, ctx);
    if (!start) {
        if (start.error().code == base::ErrorCode::no_memory)
            shared_.counters.over_group_budget.fetch_add(1, std::memory_order_relaxed);
        return report_initial_failure(start.error());
    }
    if (!finish_initial_frames()) return;
    running.reset();
    // From here on every frame carries the cursor (a plain stream's initial frames have none:
    // their order is the query's, not the store's); the watch or end frame names the snapshot.
    std::optional<std::string> cursor;
    if (store_id && (q.stream || request.after)) {
        start->position.store = *store_id;
        batcher_.track_position(start->position);
        cursor = shared_.cursor_key->seal(start->position);
        told_ = start->position;
        told_at_ = Clock::now();
    }
    if (!q.stream) return send_final(cursor ? protocol::end_frame(*cursor) : protocol::end_frame());
    if (!send_initial(cursor ? protocol::watch_frame(*cursor) : protocol::watch_frame())) {
        if (send_timed_out_) report_initial_failure(query::timeout_error(limits_.query_timeout_ms));
        return;
    }
    channel_.enlarge_send_buffer();
    follow(q, std::move(*start), access, *wake, generation);
}

bool Session::admit_events(const query::Query& q, const protocol::Request& request, access::CallerAccess& access,
                           const base::Result<store::StoreId>& store_id, std::optional<store::StorePosition>& from) {
    // The caller's view of the policy, checked before anything else is decided: §8.6.5 counts
    // every event query (streaming or not, refused for a slot or not), but not one whose fields
    // the caller may not use, nor one over types it cannot read (issue 23 item 3).
    const base::Status allowed = access.check_query(q);
    if (allowed && shared_.index.count && access.may_read_any(q))
        shared_.index.count(q, caller_, access.policy()->is_admin(caller_));
    // A resumed query: its cursor and clauses are checked before any slot or file is taken.
    if (request.after) {
        base::Status ok = query::check_resumable(q);
        if (ok && !store_id) ok = base::Error{store_id.error().code, "cannot resume: " + store_id.error().message};
        if (ok && !request.after->empty()) {
            auto opened = shared_.cursor_key->open(*request.after, *store_id);
            if (opened)
                from = std::move(*opened);
            else
                ok = opened.error();
        }
        if (!ok) {
            shared_.counters.errors.fetch_add(1, std::memory_order_relaxed);
            fail(ok.error().message);
            return false;
        }
    }
    if (q.stream) {
        if (base::Status s = ticket_.add_stream(limits_, shared_.counters); !s) {
            fail(s.error().message);
            return false;
        }
    }
    if (!allowed) {
        shared_.counters.errors.fetch_add(1, std::memory_order_relaxed);
        fail(allowed.error().message);
        return false;
    }
    return true;
}

// How many records follow the cursor (a follower's backlog): one record, then end.
void Session::run_count_after(const query::Query& q, query::ExecutionContext& ctx, const store::StoreId& store,
                              const std::optional<store::StorePosition>& from) {
    auto n = query::count_after(q, ctx, store, from);
    if (!n) return report_initial_failure(n.error());
    batcher_.add(json{{"count", *n}});
    if (!finish_initial_frames()) return;
    send_final(protocol::end_frame());
}

// The records after a cursor, in store order; every frame carries the position after its
// last record, and a gap (rows retention deleted) is said, or refused without allow_gap.
base::Result<query::StreamStart> Session::run_catch_up(const query::Query& q, query::ExecutionContext& ctx,
                                                       const store::StoreId& store,
                                                       const std::optional<store::StorePosition>& from,
                                                       bool allow_gap) {
    store::StorePosition position;
    position.store = store;
    if (from && from->store == store) position.last_id = from->last_id;
    batcher_.track_position(std::move(position));
    const query::PositionedSink sink = [this](std::span<const uint8_t> record, const query::StoredAt& at) {
        batcher_.add_encoded(record, RecordBatcher::Stored{at.file, at.id});
        return drain_batcher_initial();
    };
    const auto on_gap = [this](const query::Gap& gap) { return send_initial(protocol::gap_frame(gap.lost, gap.detail)); };
    return query::catch_up(q, ctx, store, from, allow_gap, on_gap, sink);
}

// A plain query (or a stream's initial result): the records in the query's order.
base::Result<query::StreamStart> Session::run_query(const query::Query& q, query::ExecutionContext& ctx) {
    const query::RecordSink sink = [this](std::span<const uint8_t> record) -> base::Status {
        batcher_.add_encoded(record);
        return drain_batcher_initial();
    };
    return query::execute(q, ctx, sink);
}

void Session::report_initial_failure(const base::Error& error) {
    if (send_timed_out_) {
        shared_.counters.timeouts.fetch_add(1, std::memory_order_relaxed);
        return fail(query::timeout_text(limits_.query_timeout_ms));  // unless the frame was cut
    }
    if (client_gone_) return;  // nothing can reach the client any more
    // A cancel (shutdown) is neither a timeout nor a failure: it is not counted.
    if (error.is_timed_out())
        shared_.counters.timeouts.fetch_add(1, std::memory_order_relaxed);
    else if (!error.is_cancelled())
        shared_.counters.errors.fetch_add(1, std::memory_order_relaxed);
    fail(error.message);
}

// The initial result's last records, sealed and sent.
bool Session::finish_initial_frames() {
    batcher_.flush();
    if (drain_batcher_initial()) return true;
    if (send_timed_out_) report_initial_failure(query::timeout_error(limits_.query_timeout_ms));
    return false;
}

bool Session::send_checkpoint_if_due() {
    const auto& position = batcher_.position();
    if (!position || told_ == position || Clock::now() - told_at_ < kCheckpointInterval) return true;
    batcher_.flush_position();
    told_ = position;
    told_at_ = Clock::now();
    while (batcher_.has_frame())
        if (!send_live(batcher_.next_frame())) return false;
    return true;
}

// §8.7: the live phase. Sleeps in poll() on the socket (client gone, or sending again) and the
// stream's wake fd (commits, reload, shutdown). Not subject to QueryTimeoutMs.
void Session::follow(const query::Query& q, query::StreamStart start, access::CallerAccess& access, StreamWake& wake,
                     uint64_t generation) {
    query::LiveFeed feed(q, shared_.store_dir, std::move(start.position));
    bool dropped = false;
    bool sent_records = false;
    const query::PositionedSink sink = [&](std::span<const uint8_t> record, const query::StoredAt& at) -> base::Status {
        batcher_.add_encoded(record, RecordBatcher::Stored{at.file, at.id});
        while (batcher_.has_frame()) {
            if (!send_live(batcher_.next_frame())) {
                dropped = true;
                return base::Error{EPIPE, "stream ended"};
            }
            sent_records = true;
        }
        return {};
    };
    short socket_events = POLLIN | POLLRDHUP;
    for (;;) {
        // Checked before sleeping too: a stream that subscribed after stop() woke everyone.
        if (shared_.stopping.load()) {  // §10.2 step 1
            channel_.send_now(protocol::error_frame(query::kShuttingDownText));
            return;
        }
        pollfd fds[2] = {{channel_.fd(), socket_events, 0}, {wake.fd(), POLLIN, 0}};
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            return;
        }
        if (shared_.stopping.load()) continue;
        if (fds[0].revents & (POLLHUP | POLLERR)) return;  // the client left
        if (fds[0].revents & POLLIN) {
            char byte;
            const ssize_t n = recv(channel_.fd(), &byte, 1, MSG_DONTWAIT | MSG_PEEK);
            if (n > 0) {  // §8.8: one query per connection
                channel_.send_now(
                    protocol::error_frame("only one query per connection: this connection is following a stream; "
                                "open another connection for the next query"));
                return;
            }
            if (n == 0) socket_events = 0;  // half-closed: the client may still read; POLLHUP ends it
        } else if (fds[0].revents & POLLRDHUP) {
            socket_events = 0;
        }
        if (!(fds[1].revents & POLLIN)) continue;
        const std::vector<uint32_t> shards = wake.take();
        if (const uint64_t g = shared_.policy_generation.load(); g != generation) {
            generation = g;  // §9.2: a reloaded policy applies from the next batch on
            access.reset(shared_.policy->get());
            // Issue 23: the query is checked again, for the identity captured at connect. A
            // WHERE on a field the new policy hides would otherwise go on filtering on it —
            // an oracle for its values; such a stream ends before another row is read.
            if (base::Status s = access.check_query(q); !s) {
                spdlog::info("stream of {} ended by a policy reload: {}", caller_.user_name(), s.error().message);
                channel_.send_now(protocol::error_frame(std::string(kPolicyChangedText) + s.error().message));
                return;
            }
        }
        for (uint32_t shard : shards) {
            if (base::Status s = feed.read_new(shard, access, sink); !s) {
                if (dropped) return;
                spdlog::warn("stream of {} ended: {}", caller_.user_name(), s.error().message);
                channel_.send_now(protocol::error_frame(s.error().message));
                return;
            }
        }
        // Every row up to the feed's position was examined and every match is in the batcher
        // (sealed or open): the last frame may carry that position, past trailing rows that
        // did not match.
        if (batcher_.position()) batcher_.track_position(feed.position());
        const bool had_open_records = batcher_.pending_records() > 0;
        batcher_.flush();
        while (batcher_.has_frame()) {
            if (!send_live(batcher_.next_frame())) return;
            sent_records = true;
        }
        if (sent_records) {
            told_at_ = Clock::now();
            if (had_open_records) told_ = batcher_.position();  // the last frame carried it
        }
        if (!send_checkpoint_if_due()) return;
        sent_records = false;
    }
}

}  // namespace

void run_session(ServerShared& shared, int fd, const access::Caller& caller, const protocol::Request& request,
                 Admissions::Ticket& ticket) {
    Session(shared, fd, caller, ticket).run(request);
    ::shutdown(fd, SHUT_RDWR);  // the client sees EOF now; the server closes fd after join
    ticket.release();
}

}  // namespace eventd::server
