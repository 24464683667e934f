// The shim socket (DESIGN.md §2): one thread per connection, SOCK_SEQPACKET, the request
// formats of wire.hpp. A connection that sent ATTACH *is* the attachment.
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include <spdlog/spdlog.h>

#include "../lib/socket_io.hpp"
#include "base/sync_point.hpp"
#include "base/thread_boundary.hpp"
#include "base/unix_listener.hpp"
#include "identity.hpp"
#include "shim.hpp"
#include "timed_recv.hpp"

namespace kmes::shim {
namespace {
// A thread per connection is simple and plenty for emitters and consumers; the cap keeps a
// hostile local user from exhausting threads. Issue 40, fair sockets: the last
// kReservedConnections are for privileged peers only (root, AttachGroup: eventd's attach after
// a restart always finds one), and one unprivileged uid holds MaxConnectionsPerUser at most.
constexpr size_t kMaxConnections = 1024;
constexpr size_t kReservedConnections = 64;
constexpr int kReapIntervalMs = 1000;

wire::Reply error_reply(int code) {
    wire::Reply r{};
    r.error = code;
    return r;
}
}  // namespace

base::Status Shim::listen_on(const std::string& path) {
    auto fd = base::listen_unix_socket(
        path, {.type = SOCK_SEQPACKET, .backlog = 128, .setting = "SocketPath", .daemon = "kmes-shimd"});
    if (!fd) return fd.error();
    listen_fd_ = *fd;
    return {};
}

// Join finished connection threads and close their sockets (a connection's fd stays open
// until its thread is joined, so stop()'s shutdown() can never hit a reused descriptor).
void Shim::reap_connections() {
    for (auto it = connections_.begin(); it != connections_.end();) {
        if (it->done.load()) {
            it->thread.join();
            close(it->fd);
            it = connections_.erase(it);
        } else {
            ++it;
        }
    }
}

void Shim::accept_loop() {
    for (;;) {
        // Reaping waits for no accept: after a burst of short-lived emitters, their sockets
        // and thread stacks are released within kReapInterval even if nobody connects again.
        pollfd waiting{listen_fd_, POLLIN, 0};
        if (poll(&waiting, 1, kReapIntervalMs) == 0) {
            std::lock_guard lock(connections_mutex_);
            reap_connections();
            // The count of a minute's unlogged refusals, even when no refusal follows it.
            report_unlogged_refusals(refusal_log_.take_unlogged());
            continue;
        }
        int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (stopping_.load()) {
            if (fd >= 0) close(fd);
            return;
        }
        KMES_SYNC_POINT("Shim::accept_loop:accepted");
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            continue;
        }
        // Who it is, from the socket alone (no /proc read: a flood of connections must not
        // slow the acceptor); a peer that cannot be identified is not served anyway.
        auto peer = socket_credentials(fd);
        if (!peer) {
            close(fd);
            continue;
        }
        const bool privileged = may_attach(*peer);
        std::lock_guard lock(connections_mutex_);
        reap_connections();
        if (auto refusal = refusal_of(*peer, privileged)) {
            // Closed at once: a refused connection holds nothing.
            close(fd);
            uint64_t overdue = 0;
            const bool log = refusal_log_.take(overdue);
            report_unlogged_refusals(overdue);
            if (log) spdlog::warn("connection of pid {} (uid {}) refused: {}", peer->pid, peer->euid, *refusal);
            continue;
        }
        Connection& c = connections_.emplace_back();
        c.fd = fd;
        c.uid = peer->euid;
        c.privileged = privileged;
        try {
            c.thread = std::thread([this, &c, peer = std::move(*peer)]() mutable {
                // An unexpected error ends this connection only (the client sees it closed).
                base::run_guarded(
                    "kmes-shimd connection", [this, &c, &peer] { serve(c.fd, std::move(peer)); },
                    [](const std::string&) {});
                // The peer sees the end now, not at the next reaping; the descriptor itself
                // stays open until then (stop() must never shut down a reused one).
                shutdown(c.fd, SHUT_RDWR);
                c.done.store(true);
            });
        } catch (const std::system_error& e) {
            // No thread for it now (EAGAIN: the thread limit): this connection is refused, the
            // acceptor goes on (issue 40: it used to end with the exception, and with it every
            // later attach and emit).
            spdlog::warn("connection refused: cannot start its thread: {}", e.what());
            close(fd);
            connections_.pop_back();
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    }
}

void Shim::report_unlogged_refusals(uint64_t unlogged) {
    if (unlogged > 0) spdlog::warn("{} more connection(s) refused within a minute, not logged one by one", unlogged);
}

std::optional<std::string> Shim::refusal_of(const PeerCredentials& peer, bool privileged) {
    if (connections_.size() >= kMaxConnections)
        return std::to_string(connections_.size()) + " connections open (the limit)";
    if (privileged) return std::nullopt;
    size_t unprivileged = 0, of_user = 0;
    for (const Connection& c : connections_) {
        if (c.done.load()) continue;
        unprivileged += !c.privileged;
        of_user += !c.privileged && c.uid == peer.euid;
    }
    if (unprivileged >= kMaxConnections - kReservedConnections)
        return std::to_string(unprivileged) + " unprivileged connections open (the rest is kept for root and AttachGroup)";
    const uint32_t per_user = max_connections_per_user_.load(std::memory_order_relaxed);
    if (of_user >= per_user)
        return "the user holds " + std::to_string(of_user) + " connections (MaxConnectionsPerUser " +
               std::to_string(per_user) + ")";
    return std::nullopt;
}

void Shim::stop() {
    if (stopping_.exchange(true)) return;
    for (auto& g : generators_) g->stop();
    {
        // Rules removed, daemon role released, kernel settings restored — before the rings go.
        std::lock_guard lock(audit_mutex_);
        audit_.reset();
    }
    if (listen_fd_ >= 0) {
        shutdown(listen_fd_, SHUT_RDWR);  // wakes accept4
        if (acceptor_.joinable()) acceptor_.join();
        close(listen_fd_);
        listen_fd_ = -1;
        unlink(config_.socket_path.c_str());
    }
    rings_->retire_all();  // after the socket is gone, so re-attaching consumers fail fast
    std::lock_guard lock(connections_mutex_);
    for (Connection& c : connections_) shutdown(c.fd, SHUT_RDWR);
    for (Connection& c : connections_) {
        c.thread.join();
        close(c.fd);
    }
    connections_.clear();
}

void Shim::serve(int fd, PeerCredentials peer) {
    KMES_SYNC_POINT("Shim::serve:connected");
    add_process_details(peer);
    const Identity identity = identity_of(peer, boot_id_);
    std::shared_ptr<ProducerRing> attached;  // set by ATTACH; keeps that ring alive
    std::vector<uint8_t> message(wire::kMaxPacket);
    bool served_one = false;
    while (!stopping_.load(std::memory_order_relaxed)) {
        message.resize(wire::kMaxPacket);
        // Issue 40: a new connection has RequestTimeoutMs to send its first request; one that
        // did may then wait idle (an emitter between events), bounded by MaxConnectionsPerUser.
        const int timeout_ms = request_timeout_ms_.load(std::memory_order_relaxed);
        const ssize_t n = served_one ? recv(fd, message.data(), message.size(), 0)
                                     : recv_within(fd, message.data(), message.size(), 0, timeout_ms);
        if (n < 0 && errno == ETIMEDOUT) {
            spdlog::debug("pid {}: no request within {} ms, closing the connection", peer.pid, timeout_ms);
            return;
        }
        if (n <= 0) return;  // peer closed (or shutdown): the attachment ends here
        message.resize(static_cast<size_t>(n));
        wire::RequestHeader header;
        if (message.size() < sizeof header) return;
        std::memcpy(&header, message.data(), sizeof header);
        const bool multi_packet = header.total_len != message.size();
        const auto op = static_cast<wire::Op>(header.op);
        if (header.magic != wire::kMagic || header.total_len < message.size() ||
            (multi_packet && op != wire::Op::emit && op != wire::Op::emit_batch)) {
            spdlog::warn("pid {}: malformed request (op {}), closing the connection", peer.pid, header.op);
            (void)detail::send_reply(fd, error_reply(EPROTO));
            return;
        }
        wire::Reply reply{};
        bool refused_privilege = false;  // EPERM for want of the privilege: nothing else to do here
        switch (op) {
            case wire::Op::attach:
                reply = attach(peer, header.cpu, attached);
                refused_privilege = reply.error == EPERM && !may_attach(peer);
                break;
            case wire::Op::map:
                map(fd, std::span(message).subspan(sizeof header), attached);
                served_one = true;
                continue;  // map() replies itself (with descriptors)
            case wire::Op::emit:
            case wire::Op::emit_batch:
                reply = emit(fd, peer, identity, header, message);
                refused_privilege = reply.error == EPERM && !may_emit(peer);
                break;
            case wire::Op::boot_id:
                std::memcpy(reply.boot_id, boot_id_.data(), 16);
                break;
            default:
                reply = error_reply(EOPNOTSUPP);
                break;
        }
        if (detail::send_reply(fd, reply) != 0) return;
        // Issue 40: a peer refused its privilege holds no slot — the connection ends with the reply.
        if (refused_privilege) return;
        served_one = true;
    }
}

bool Shim::may_attach(const PeerCredentials& peer) const {
    const int64_t group = attach_group_.load(std::memory_order_relaxed);
    return peer.is_root() || (group >= 0 && peer.in_group(static_cast<gid_t>(group)));
}

bool Shim::may_emit(const PeerCredentials& peer) const {
    const int64_t group = emit_group_.load(std::memory_order_relaxed);
    return peer.is_root() || (group >= 0 && peer.in_group(static_cast<gid_t>(group)));
}

// v0.22 §4.1.4 kmes_attach(cpu_id): privilege first, then the CPU range.
wire::Reply Shim::attach(const PeerCredentials& peer, uint32_t cpu, std::shared_ptr<ProducerRing>& attached) {
    if (!may_attach(peer)) return error_reply(EPERM);
    if (cpu >= rings_->cpu_count()) return error_reply(EINVAL);
    if (attached) return error_reply(EINVAL);  // one ring per attachment
    attached = rings_->ring(cpu);
    wire::Reply reply{};
    reply.capacity = attached->capacity();
    reply.generation = attached->created_generation();  // lets the reader spot a retired ring exactly
    std::memcpy(reply.boot_id, boot_id_.data(), 16);
    return reply;
}

void Shim::map(int fd, std::span<const uint8_t> body, const std::shared_ptr<ProducerRing>& attached) {
    if (!attached) {
        (void)detail::send_reply(fd, error_reply(EBADF));
        return;
    }
    uint64_t capacity = 0;
    if (body.size() == sizeof capacity) std::memcpy(&capacity, body.data(), sizeof capacity);
    if (capacity != attached->capacity()) {
        (void)detail::send_reply(fd, error_reply(EINVAL));
        return;
    }
    wire::Reply reply{};
    reply.capacity = attached->capacity();
    reply.generation = attached->created_generation();  // lets the reader spot a retired ring exactly
    const int fds[wire::kMapFdCount] = {attached->consumer_producer_fd(), attached->consumer_page_fd(),
                                        attached->consumer_data_fd()};
    (void)detail::send_reply(fd, reply, fds);
}

}  // namespace kmes::shim
