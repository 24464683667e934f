// kmes-shimd: "KMES inside the kernel" as a root daemon (DESIGN.md §2). The Shim object owns
// the per-CPU rings, the limits in force, the socket server and the built-in emitters.
// Split by concern: shim.cpp (lifecycle, configuration, self-events), shim_server.cpp
// (socket, attach/map), shim_emit.cpp (syscall emission checks), generator.cpp, shim_audit.cpp
// (the audit source).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "audit/audit_source.hpp"
#include "base/log_budget.hpp"
#include "config.hpp"
#include "generator.hpp"
#include "peer.hpp"
#include "rate_limiter.hpp"
#include "ring_set.hpp"
#include "../lib/wire.hpp"

namespace kmes::shim {

class Shim {
public:
    // Boot (§6.1.3 step 1): rings at the compiled-in capacity, socket listening. `config`
    // supplies the start-only keys; its §6.1 keys are applied later by apply_registry().
    static base::Result<std::unique_ptr<Shim>> start(const ShimConfig& config);
    ~Shim();

    // §6.1.3 steps 2–3 and every later change: apply the valid values of `loaded` (limits
    // at once, BufferCapacity by a ring swap) and write a self-event per rejection.
    void apply_registry(const ConfigLoad& loaded);

    void start_generators(const std::vector<GeneratorSpec>& specs);
    void stop();  // stop generators, close the socket, end every connection

    RingSet& rings() { return *rings_; }
    const std::array<uint8_t, 16>& boot_id() const { return boot_id_; }
    const ShimConfig& config() const { return config_; }
    // Drop rate-limit buckets of exited processes (called periodically by main).
    void collect_garbage() { limiter_.forget_exited(); }
    // A thread the shim cannot do without (the acceptor, the audit source) stopped on an
    // unexpected error (base/thread_boundary.hpp): the reason is kept and SIGTERM sent to the
    // process, so that main stops the shim as for a signal and exits 1 (systemd restarts it).
    void fail(const std::string& why);
    std::optional<std::string> failure() const;

private:
    explicit Shim(const ShimConfig& config);

    // shim.cpp
    void write_self_event(std::string_view type, const nlohmann::json& payload);

    // shim_server.cpp
    base::Status listen_on(const std::string& path);
    void accept_loop();
    void reap_connections();  // connections_mutex_ held
    // The connection's acceptance (issue 40, fair sockets): nullopt to accept it, else why not.
    std::optional<std::string> refusal_of(const PeerCredentials& peer, bool privileged);  // connections_mutex_ held
    void report_unlogged_refusals(uint64_t unlogged);  // refusal_log_'s count of a minute, when not 0
    void serve(int fd, PeerCredentials peer);
    bool may_attach(const PeerCredentials& peer) const;  // root or AttachGroup
    bool may_emit(const PeerCredentials& peer) const;    // root or EmitGroup (SeAuditPrivilege)
    wire::Reply attach(const PeerCredentials& peer, uint32_t cpu, std::shared_ptr<ProducerRing>& attached);
    void map(int fd, std::span<const uint8_t> body, const std::shared_ptr<ProducerRing>& attached);

    // shim_audit.cpp: the ring an emitter on `cpu` writes — its CPU's, except that ring 0 is the
    // kernel source's own while one runs (and there is another ring): then 1 + cpu % (rings − 1).
    uint32_t emit_ring(uint32_t cpu) const;

    // shim_emit.cpp
    wire::Reply emit(int fd, const PeerCredentials& peer, const Identity& identity, const wire::RequestHeader& header,
                     std::vector<uint8_t>& message);

    ShimConfig config_;  // values in force; guarded by config_mutex_ for the runtime keys
    std::mutex config_mutex_;
    // Limits read on every syscall without a lock (relaxed: each is an independent value;
    // a request racing a change sees the old or the new one, both valid).
    std::atomic<uint32_t> max_event_size_;
    std::atomic<uint32_t> max_nesting_depth_;
    std::atomic<int64_t> attach_group_;  // -1: root only
    std::atomic<int64_t> emit_group_;
    std::atomic<uint32_t> max_connections_per_user_;
    std::atomic<uint32_t> request_timeout_ms_;
    // KMES_TEST_ALLOW_RESERVED_TYPES=1 in a build with sync points (shim.cpp): emitters may
    // write the reserved namespaces, as before issue 39 — how tests make forged rows.
    const bool test_allow_reserved_types_;
    RateLimiter limiter_;

    std::unique_ptr<RingSet> rings_;
    std::array<uint8_t, 16> boot_id_{};

    int listen_fd_ = -1;
    std::thread acceptor_;
    std::atomic<bool> stopping_{false};
    mutable std::mutex failure_mutex_;
    std::optional<std::string> failure_;  // the first, guarded by failure_mutex_
    struct Connection {
        int fd;
        uid_t uid;        // the peer's effective uid (SO_PEERCRED), which its per-user cap counts
        bool privileged;  // root or AttachGroup at connect: exempt from the per-user cap
        std::thread thread;
        std::atomic<bool> done{false};
    };
    std::mutex connections_mutex_;
    std::list<Connection> connections_;
    base::LogBudget refusal_log_{10};  // connections_mutex_: refused connections are logged ten a minute

    std::vector<std::unique_ptr<Generator>> generators_;

    // shim_audit.cpp: the audit source (docs/AUDIT.md), (re)started when its settings change.
    void apply_audit(const audit::AuditSettings& settings);
    void write_audit_events(std::span<const audit::AuditEvent> events);  // one ring write
    std::mutex audit_mutex_;  // apply_audit (main thread) against stop()
    std::unique_ptr<audit::AuditSource> audit_;
    // Set while an audit source runs (apply_audit); read on every emit (relaxed: a request racing
    // a change lands in either ring, both valid).
    std::atomic<bool> kernel_ring_reserved_{false};
    std::optional<audit::AuditSettings> audit_applied_;  // what apply_audit last acted on
};

}  // namespace kmes::shim
