#include "eventd/server/query_server.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <future>
#include <list>
#include <mutex>
#include <set>
#include <thread>

#include <boost/asio.hpp>
#include <spdlog/spdlog.h>

#include "eventd/query_language/errors.hpp"
#include "eventd/server/record_batcher.hpp"
#include "protocol/wire.hpp"
#include "base/thread_boundary.hpp"
#include "base/sync_point.hpp"

namespace eventd::server {
namespace {

namespace asio = boost::asio;
using stream_protocol = asio::local::stream_protocol;
using boost::system::error_code;

constexpr auto kStopGrace = std::chrono::milliseconds(500);    // for queries to end by themselves
constexpr auto kAcceptRetry = std::chrono::milliseconds(100);  // after EMFILE and the like
constexpr int kShedPerRound = 64;                              // connections refused per retry while out of descriptors
// A request body's first read (issue 40 item 1): the length header is the client's word, so the
// body grows with the bytes that came — this much first, then twice what arrived — never to
// the announced length at once. 4 KiB holds every request eventctl sends in one read.
constexpr size_t kFirstBodyChunk = 4096;

// A short reply on a socket the io thread still owns: never waits (a fresh connection's send
// buffer takes it whole; if not, the client gets nothing but the close).
void send_now(int fd, const std::vector<uint8_t>& frame) {
    (void)!::send(fd, frame.data(), frame.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

}  // namespace

// A connection between accept and the hand-off of its request to a worker.
struct Pending {
    Pending(asio::io_context& io, stream_protocol::socket s) : socket(std::move(s)), timer(io) {}
    stream_protocol::socket socket;
    asio::steady_timer timer;
    std::array<uint8_t, protocol::kFrameHeaderBytes> header{};
    uint32_t length = 0;  // the body's, as the header announced it (at most MaxQueryMessageBytes)
    size_t received = 0;  // of the body; body.size() - received bytes are being read
    std::vector<uint8_t> body;
    access::Caller caller;
    Admissions::Ticket ticket;
};

struct Worker {
    int fd;
    std::shared_ptr<std::atomic<bool>> done;
    std::thread thread;
};

struct QueryServer::Impl {
    explicit Impl(ServerOptions o) : acceptor(io), commits(io), accept_retry(io), work(asio::make_work_guard(io)) {
        shared.store_dir = std::move(o.store_dir);
        shared.policy = o.policy;
        shared.daemon_status = std::move(o.daemon_status);
        shared.verify_store = std::move(o.verify_store);
        shared.index = std::move(o.index);
        shared.set_limits(o.limits);
    }

    void accept_next();
    void retry_accept();
    void shed_connections();
    void on_accept(stream_protocol::socket socket);
    void read_header(const std::shared_ptr<Pending>& p);
    void read_body(const std::shared_ptr<Pending>& p);
    void refuse(const std::shared_ptr<Pending>& p, const std::string& message);
    void hand_off(const std::shared_ptr<Pending>& p, protocol::Request request);
    void watch_commits();
    void reap(bool all);

    ServerShared shared;
    asio::io_context io;
    stream_protocol::acceptor acceptor;
    asio::posix::stream_descriptor commits;
    asio::steady_timer accept_retry;
    asio::executor_work_guard<asio::io_context::executor_type> work;
    std::thread io_thread;
    std::atomic<int64_t> probe_posted_ns{0};  // QueryServer::probe(): steady clock, 0 = answered
    std::set<std::shared_ptr<Pending>> pending;  // io thread only
    std::mutex workers_mutex;
    std::list<Worker> workers;
    bool stopped = false;
    // A descriptor held in reserve (/dev/null): when accept fails for lack of descriptors, it
    // is closed so that the waiting connections can be accepted one by one, told why, and
    // closed — instead of waiting in the backlog with no answer. io thread only.
    int reserve_fd = -1;
    uint64_t shed = 0;  // connections refused in the current out-of-descriptors episode
};

void QueryServer::Impl::accept_next() {
    acceptor.async_accept([this](error_code ec, stream_protocol::socket socket) {
        if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
        const bool no_descriptors = ec == asio::error::no_descriptors || ec.value() == ENFILE;
        if (no_descriptors) {
            // Logged once per episode, not per retry; the connections waiting get an answer.
            if (shed == 0)
                spdlog::warn(
                    "query socket: out of file descriptors ({}); refusing new connections "
                    "with an error until descriptors free up",
                    ec.message());
            shed_connections();
            return retry_accept();
        }
        if (ec) {
            spdlog::warn("query socket: accept failed: {}; retrying", ec.message());
            return retry_accept();
        }
        if (reserve_fd < 0 && (reserve_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
            // The reserve was lost while out of descriptors (another thread took the number it
            // freed) and this connection holds the last one: it is the one refused, so that
            // the reserve is back before the next connection arrives.
            send_now(socket.native_handle(), protocol::error_frame(query::kNoDescriptorForConnectionText));
            error_code ignored;
            socket.close(ignored);
            ++shed;
            shared.counters.errors.fetch_add(1, std::memory_order_relaxed);
            reserve_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
            return accept_next();
        }
        if (shed > 0) {
            spdlog::info("query socket: accepting connections again ({} refused while out of file descriptors)", shed);
            shed = 0;
        }
        // The next accept is armed first: if handling this connection throws (to the io
        // thread's guard, which runs the loop again), the server still accepts (issue 40).
        accept_next();
        on_accept(std::move(socket));
    });
}

// Not at once: the listening socket stays readable while the backlog holds connections, so
// an immediate retry would spin. A connection arriving meanwhile waits at most kAcceptRetry.
void QueryServer::Impl::retry_accept() {
    accept_retry.expires_after(kAcceptRetry);
    accept_retry.async_wait([this](error_code e) {
        if (!e) accept_next();
    });
}

void QueryServer::Impl::shed_connections() {
    const int listen_fd = acceptor.native_handle();
    for (int i = 0; i < kShedPerRound; ++i) {
        pollfd ready{listen_fd, POLLIN, 0};
        if (::poll(&ready, 1, 0) != 1) break;  // nothing waiting: never block the io thread
        if (reserve_fd >= 0) {
            ::close(reserve_fd);
            reserve_fd = -1;
        }
        const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) break;  // another thread took the freed descriptor first, or the client left
        send_now(fd, protocol::error_frame(query::kNoDescriptorForConnectionText));
        ::close(fd);
        ++shed;
        shared.counters.errors.fetch_add(1, std::memory_order_relaxed);
        reserve_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    }
    if (reserve_fd < 0) reserve_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
}

void QueryServer::Impl::on_accept(stream_protocol::socket socket) {
    KMES_SYNC_POINT("QueryServer::on_accept");  // tests make the handler throw here
    auto p = std::make_shared<Pending>(io, std::move(socket));
    // §9.2: the caller is captured at connect; failure → the query is denied entirely.
    auto caller = access::caller_of(p->socket.native_handle());
    if (!caller) return refuse(p, "access denied: cannot identify the caller: " + caller.error().message);
    p->caller = std::move(*caller);
    const ServerLimits limits = shared.limits();
    // Counted at once: an idle connection holds its slot (§8.6.9).
    const bool admin = shared.policy && shared.policy->get()->is_admin(p->caller);
    auto ticket = shared.admissions.admit(p->caller.uid, admin, limits, shared.counters);
    if (!ticket) return refuse(p, ticket.error().message);
    p->ticket = std::move(*ticket);
    pending.insert(p);
    // The whole request must arrive within QueryTimeoutMs; a client that sends nothing is
    // closed then.
    p->timer.expires_after(std::chrono::milliseconds(limits.query_timeout_ms));
    p->timer.async_wait([this, p, ms = limits.query_timeout_ms](error_code ec) {
        if (ec || !pending.count(p)) return;
        shared.counters.timeouts.fetch_add(1, std::memory_order_relaxed);
        refuse(p, "no complete request within " + std::to_string(ms) + " ms (QueryTimeoutMs)");
    });
    read_header(p);
}

void QueryServer::Impl::read_header(const std::shared_ptr<Pending>& p) {
    asio::async_read(p->socket, asio::buffer(p->header), [this, p](error_code ec, size_t got) {
        if (!pending.count(p)) return;
        if (ec) {  // the client left, perhaps half-way through the header (it may still read)
            if (got == 0) {
                p->timer.cancel();
                pending.erase(p);
                return;
            }
            return refuse(p, "request truncated: the connection closed after " + std::to_string(got) + " of " +
                                 std::to_string(protocol::kFrameHeaderBytes) + " header bytes");
        }
        const uint32_t length = protocol::frame_length(p->header);
        const uint32_t max = shared.limits().max_query_message_bytes;
        // §8.8: rejected without reading the body — no allocation of the announced size.
        if (length > max) return refuse(p, protocol::oversized_request_message(length, max));
        // Within the limit the length is still only announced: the body is allocated as it
        // arrives (read_body): a connection announcing MaxQueryMessageBytes (up to 16 MiB) and
        // sending little holds 4 KiB or twice what it sent, not the announced size (issue 40 item 1).
        p->length = length;
        p->received = 0;
        read_body(p);
    });
}

void QueryServer::Impl::read_body(const std::shared_ptr<Pending>& p) {
    const size_t at = p->received;
    const size_t until = std::min<size_t>(p->length, std::max(kFirstBodyChunk, 2 * at));
    p->body.resize(until);
    asio::async_read(
        p->socket, asio::buffer(p->body.data() + at, until - at), [this, p, at](error_code ec, size_t got) {
            if (!pending.count(p)) return;
            if (ec)  // truncated frame: the client stopped sending before the whole body
                return refuse(p, "request truncated: the connection closed after " + std::to_string(at + got) + " of " +
                                     std::to_string(p->length) + " body bytes");
            p->received = at + got;
            if (p->received < p->length) return read_body(p);
            auto request = protocol::decode_request(p->body);
            if (!request) {
                shared.counters.errors.fetch_add(1, std::memory_order_relaxed);
                return refuse(p, request.error().message);
            }
            hand_off(p, std::move(*request));
        });
}

void QueryServer::Impl::refuse(const std::shared_ptr<Pending>& p, const std::string& message) {
    send_now(p->socket.native_handle(), protocol::error_frame(message));
    p->timer.cancel();
    error_code ignored;
    p->socket.close(ignored);
    pending.erase(p);
}

void QueryServer::Impl::hand_off(const std::shared_ptr<Pending>& p, protocol::Request request) {
    p->timer.cancel();
    pending.erase(p);
    reap(false);
    error_code ec;
    const int fd = p->socket.release(ec);  // from now on the worker owns the socket
    if (ec) return;
    auto done = std::make_shared<std::atomic<bool>>(false);
    std::lock_guard lock(workers_mutex);
    try {
        workers.push_back(Worker{fd, done,
                                 std::thread([this, fd, done, caller = std::move(p->caller),
                                              request = std::move(request), ticket = std::move(p->ticket)]() mutable {
                                     // Issue 40: a caller who is not an administrator queries at
                                     // a lower CPU priority, UserQueryNice (this thread's nice,
                                     // never raised back: the thread ends with the query). With
                                     // nice 19 CFS gives root's query thread (weight 1024) about
                                     // 68 times the share of each such thread (15), and the
                                     // drains and writers keep theirs.
                                     if (!(shared.policy && shared.policy->get()->is_admin(caller)))
                                         ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()),
                                                       static_cast<int>(shared.limits().user_query_nice));
                                     // Only this query fails; the client is told if it can be.
                                     base::run_guarded(
                                         "query worker", [&] { run_session(shared, fd, caller, request, ticket); },
                                         [&](const std::string&) {
                                             shared.counters.errors.fetch_add(1, std::memory_order_relaxed);
                                             send_now(fd, protocol::error_frame("eventd failed to run this query "
                                                                      "(internal error, see its log)"));
                                             ::shutdown(fd, SHUT_RDWR);
                                         });
                                     done->store(true);
                                     // Joined and closed by the io thread now, rather than by
                                     // a periodic timer that would wake an idle eventd.
                                     asio::post(io, [this] { reap(false); });
                                 })});
    } catch (const std::system_error& e) {
        // No thread (resource limit): the ticket moved into the failed lambda is released.
        spdlog::error("query socket: cannot start a query thread: {}", e.what());
        send_now(fd, protocol::error_frame("eventd cannot start a query thread now; try again"));
        close(fd);
    }
}

void QueryServer::Impl::watch_commits() {
    commits.async_wait(asio::posix::stream_descriptor::wait_read, [this](error_code ec) {
        if (ec) return;
        shared.signal->dispatch();
        watch_commits();
    });
}

// Join finished workers and close their sockets (the fd stays open until the join, so
// stop()'s shutdown() can never hit a reused descriptor).
void QueryServer::Impl::reap(bool all) {
    std::lock_guard lock(workers_mutex);
    for (auto it = workers.begin(); it != workers.end();) {
        if (!all && !it->done->load()) {
            ++it;
            continue;
        }
        it->thread.join();
        close(it->fd);
        it = workers.erase(it);
    }
}

QueryServer::QueryServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

QueryServer::~QueryServer() { stop(); }

base::Result<std::unique_ptr<QueryServer>> QueryServer::start(ServerOptions options) {
    const int listen_fd = options.listen_fd;
    auto signal = CommitSignal::create(options.shard_count);
    if (!signal) {
        close(listen_fd);  // ours from the call on
        return base::Error{signal.error().code, "query server: " + signal.error().message};
    }
    auto cursor_key = store::CursorKey::load_or_create(options.store_dir);
    if (!cursor_key) {
        close(listen_fd);
        return base::Error{cursor_key.error().code, "query server: " + cursor_key.error().message};
    }
    auto impl = std::make_unique<Impl>(std::move(options));
    impl->shared.signal = std::move(*signal);
    impl->shared.cursor_key = std::move(*cursor_key);
    error_code ec;
    impl->acceptor.assign(stream_protocol(), listen_fd, ec);
    if (ec) return base::Error{ec.value(), "query socket: cannot use the listening socket: " + ec.message()};
    const int commit_fd = dup(impl->shared.signal->fd());
    if (commit_fd < 0) return base::errno_error("query server: dup of the commit eventfd");
    impl->commits.assign(commit_fd, ec);
    if (ec) return base::Error{ec.value(), "query server: cannot watch commits: " + ec.message()};
    impl->reserve_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    Impl* raw = impl.get();
    asio::post(raw->io, [raw] {
        raw->accept_next();
        raw->watch_commits();
    });
    raw->io_thread = std::thread([raw] {
        // A handler that throws leaves run(); Asio allows calling run() again, so the server
        // goes on serving. The chain that handler belonged to (one connection — or, if it was
        // the accept or commit handler, that loop) has ended; the log says which thread.
        for (bool done = false; !done;) {
            done = true;
            base::run_guarded(
                "query server io thread", [raw] { raw->io.run(); }, [&](const std::string&) { done = false; });
        }
    });
    return std::unique_ptr<QueryServer>(new QueryServer(std::move(impl)));
}

void QueryServer::on_commit(uint32_t shard) { impl_->shared.signal->notify(shard); }

void QueryServer::set_limits(const ServerLimits& limits) { impl_->shared.set_limits(limits); }

void QueryServer::policy_changed() {
    // The generation is bumped before the wake (seq_cst RMW, then the eventfd write), so a
    // stream woken by it reads the new generation and re-checks its query at once (session.cpp),
    // rather than at its next commit.
    impl_->shared.policy_generation.fetch_add(1);
    impl_->shared.signal->wake_all();
}

nlohmann::json QueryServer::queries_record() const { return impl_->shared.queries_record(); }

void QueryServer::probe() {
    // One probe at a time: pending until the io thread has run it. The io thread's store of 0
    // and the next load here are on one atomic (seq_cst): a probe is never left unposted.
    if (impl_->probe_posted_ns.load() != 0) return;
    impl_->probe_posted_ns.store(std::chrono::steady_clock::now().time_since_epoch().count());
    asio::post(impl_->io, [impl = impl_.get()] { impl->probe_posted_ns.store(0); });
}

std::chrono::steady_clock::duration QueryServer::probe_unanswered_for() const {
    const int64_t posted = impl_->probe_posted_ns.load();
    if (posted == 0) return {};
    return std::chrono::steady_clock::now().time_since_epoch() - std::chrono::steady_clock::duration(posted);
}

void QueryServer::stop() {
    Impl& d = *impl_;
    if (d.stopped) return;
    d.stopped = true;
    // The cancel flag of every running query (progress handler) and of every stream.
    d.shared.stopping.store(true);
    d.shared.signal->wake_all();
    KMES_SYNC_POINT("QueryServer::stop:after_cancel");
    // Stop accepting; connections still sending their request are told why they close.
    std::promise<void> closed;
    asio::post(d.io, [&d, &closed] {
        error_code ignored;
        d.acceptor.close(ignored);
        d.accept_retry.cancel();
        while (!d.pending.empty()) d.refuse(*d.pending.begin(), query::kShuttingDownText);
        closed.set_value();
    });
    closed.get_future().wait();
    // Queries end by themselves (cancelled, streams told); a worker still blocked in a send to
    // a client that does not read is released by shutting its socket down.
    const auto until = std::chrono::steady_clock::now() + kStopGrace;
    for (;;) {
        bool all_done = true;
        {
            std::lock_guard lock(d.workers_mutex);
            for (const Worker& w : d.workers) all_done &= w.done->load();
        }
        if (all_done || std::chrono::steady_clock::now() >= until) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    {
        std::lock_guard lock(d.workers_mutex);
        for (const Worker& w : d.workers)
            if (!w.done->load()) ::shutdown(w.fd, SHUT_RDWR);
    }
    d.reap(true);
    d.work.reset();
    d.io.stop();
    if (d.io_thread.joinable()) d.io_thread.join();
    if (d.reserve_fd >= 0) ::close(d.reserve_fd);
    d.reserve_fd = -1;
}

}  // namespace eventd::server
