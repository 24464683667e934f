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

namespace kmes::shim {
namespace {
// A thread per connection is simple and plenty for emitters and consumers; the cap keeps a
// hostile local user from exhausting threads.
constexpr size_t kMaxConnections = 1024;
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
        std::lock_guard lock(connections_mutex_);
        reap_connections();
        if (connections_.size() >= kMaxConnections) {
            spdlog::warn("connection refused: {} connections open (limit)", connections_.size());
            close(fd);
            continue;
        }
        Connection& c = connections_.emplace_back();
        c.fd = fd;
        try {
            c.thread = std::thread([this, &c] {
                // An unexpected error ends this connection only (the client sees it closed).
                base::run_guarded("kmes-shimd connection", [this, &c] { serve(c.fd); }, [](const std::string&) {});
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

void Shim::serve(int fd) {
    KMES_SYNC_POINT("Shim::serve:connected");
    auto peer = peer_credentials(fd);
    if (!peer) {
        spdlog::warn("dropping a connection: {}", peer.error().message);
        return;
    }
    const Identity identity = identity_of(*peer, boot_id_);
    std::shared_ptr<ProducerRing> attached;  // set by ATTACH; keeps that ring alive
    std::vector<uint8_t> message(wire::kMaxPacket);
    while (!stopping_.load(std::memory_order_relaxed)) {
        message.resize(wire::kMaxPacket);
        const ssize_t n = recv(fd, message.data(), message.size(), 0);
        if (n <= 0) return;  // peer closed (or shutdown): the attachment ends here
        message.resize(static_cast<size_t>(n));
        wire::RequestHeader header;
        if (message.size() < sizeof header) return;
        std::memcpy(&header, message.data(), sizeof header);
        const bool multi_packet = header.total_len != message.size();
        const auto op = static_cast<wire::Op>(header.op);
        if (header.magic != wire::kMagic || header.total_len < message.size() ||
            (multi_packet && op != wire::Op::emit && op != wire::Op::emit_batch)) {
            spdlog::warn("pid {}: malformed request (op {}), closing the connection", peer->pid, header.op);
            (void)detail::send_reply(fd, error_reply(EPROTO));
            return;
        }
        wire::Reply reply{};
        switch (op) {
            case wire::Op::attach:
                reply = attach(*peer, header.cpu, attached);
                break;
            case wire::Op::map:
                map(fd, std::span(message).subspan(sizeof header), attached);
                continue;  // map() replies itself (with descriptors)
            case wire::Op::emit:
            case wire::Op::emit_batch:
                reply = emit(fd, *peer, identity, header, message);
                break;
            case wire::Op::boot_id:
                std::memcpy(reply.boot_id, boot_id_.data(), 16);
                break;
            default:
                reply = error_reply(EOPNOTSUPP);
                break;
        }
        if (detail::send_reply(fd, reply) != 0) return;
    }
}

// v0.22 §4.1.4 kmes_attach(cpu_id): privilege first, then the CPU range.
wire::Reply Shim::attach(const PeerCredentials& peer, uint32_t cpu, std::shared_ptr<ProducerRing>& attached) {
    const int64_t group = attach_group_.load(std::memory_order_relaxed);
    if (!peer.is_root() && (group < 0 || !peer.in_group(static_cast<gid_t>(group)))) return error_reply(EPERM);
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
