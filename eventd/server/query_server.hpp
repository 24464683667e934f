// The query server (PSD-008 §8.6.7–§8.8, DESIGN.md §4.4): Boost.Asio on QuerySocketPath.
//
//   io thread (one)                                     worker thread (one per running query)
//   accept ─► caller_of (SO_PEERCRED + groups)          run_session (session.hpp):
//          ─► slot: MaxConcurrentQueries,               parse, limits, access, execute,
//             MaxQueriesPerUser (idle ones count)        frames, stream live phase
//          ─► read one request frame within
//             QueryTimeoutMs; length checked before
//             the body is read (MaxQueryMessageBytes)
//          ─► hand the socket to a worker ───────────►
//   commit eventfd ─► CommitSignal::dispatch ─► StreamWake of each stream
//
// The io thread never runs SQLite and never waits on a client; a worker is bounded by the
// query's deadline until its stream goes live, and a live stream never blocks (§8.7.6).
// docs/QUERY-SERVER.md describes the protocol, limits and threading for operators.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "eventd/access/policy.hpp"
#include "eventd/server/session.hpp"

namespace eventd::server {

struct ServerOptions {
    int listen_fd = -1;  // bound and listening (mode 0666); the server owns and closes it
    std::filesystem::path store_dir;
    uint32_t shard_count = 1;  // active shards (WriterHooks::on_commit indices)
    ServerLimits limits;
    access::PolicyHolder* policy = nullptr;  // outlives the server
    // STATUS records of the daemon (rings, shards, rates), called on a worker thread.
    std::function<std::vector<nlohmann::json>()> daemon_status;
    std::function<base::Result<std::vector<nlohmann::json>>(const std::string& key)> verify_store;  // VERIFY
    IndexHooks index;  // adaptive-index accounting and EVENTS INDEX
};

class QueryServer {
public:
    // Starts the io thread; accepting begins at once. Errors: the listening fd cannot be used.
    static base::Result<std::unique_ptr<QueryServer>> start(ServerOptions options);
    ~QueryServer();
    QueryServer(const QueryServer&) = delete;
    QueryServer& operator=(const QueryServer&) = delete;

    // WriterHooks::on_commit: lock-free, never blocks a writer (commit_signal.hpp).
    void on_commit(uint32_t shard);
    // Reload: limits and the timeout apply to new connections at once; a new policy applies
    // to new queries at once and to running streams from their next batch.
    void set_limits(const ServerLimits& limits);
    void policy_changed();

    // §10.2 step 1: stop accepting (the listening socket is closed), waiting connections get
    // "eventd is shutting down", running queries are cancelled, streams end with
    // {status:"error", error:"eventd is shutting down"}; every thread is joined.
    void stop();

    nlohmann::json queries_record() const;

    // The watchdog (issue 40; Daemon::stalled): probe() posts a no-op to the io thread, which
    // accepts and serves every connection; probe_unanswered_for() is how long the oldest
    // probe has waited (zero when answered). Main thread.
    void probe();
    std::chrono::steady_clock::duration probe_unanswered_for() const;

private:
    struct Impl;
    explicit QueryServer(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace eventd::server
