// One query on one connection, run on its own worker thread (PSD-008 §8.6.7–§8.8, §9.2):
//
//   parse ─► STATUS? admin check ─► records ─► end
//         └► STREAM? streaming slot ─► check_query ─► execute (deadline, cancel flag)
//              ─► {ok, records} frames ─► end            (plain query)
//              ─► {ok, records} frames ─► watch ─► live  (stream, §8.7)
//         └► after: <cursor>? ─► check_query ─► catch_up (query/resume.hpp)
//              ─► [gap] ─► {ok, records, cursor} frames ─► watch|end, with the cursor ─► live
//
// SQLite work never runs on the io thread. Sends of the initial result block only this
// worker, bounded by the query's deadline (SO_SNDTIMEO); live sends never block: a full
// socket buffer drops the stream (§8.7.6).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eventd/access/caller.hpp"
#include "eventd/access/policy.hpp"
#include "eventd/server/commit_signal.hpp"
#include "eventd/server/frame.hpp"
#include "store/cursor_key.hpp"
#include "base/result.hpp"

namespace eventd::server {

// The query keys of §12.1 (and ours); applied to new connections at once on reload.
struct ServerLimits {
    uint32_t query_timeout_ms = 30000;
    uint32_t max_concurrent_queries = 128;
    uint32_t max_streaming_queries = 64;
    uint32_t max_queries_per_user = 16;
    uint32_t max_streaming_queries_per_user = 8;
    // Of MaxConcurrentQueries and of MaxStreamingQueries, the slots unprivileged callers
    // together leave free: an administrator can always connect and stream (issue 23 item 5).
    uint32_t admin_reserved_queries = 4;
    uint32_t max_query_message_bytes = 65536;
    uint32_t query_response_target_bytes = 65536;
};

// What `eventctl status` shows about queries; every refusal and drop is counted.
struct QueryCounters {
    std::atomic<uint64_t> accepted{0};
    std::atomic<uint64_t> refused_concurrency{0};
    std::atomic<uint64_t> refused_streaming{0};
    std::atomic<uint64_t> refused_per_user{0};
    std::atomic<uint64_t> refused_streaming_per_user{0};
    std::atomic<uint64_t> timeouts{0};
    std::atomic<uint64_t> dropped_streams{0};
    std::atomic<uint64_t> errors{0};
};

// Connection and stream slots (MaxConcurrentQueries, MaxQueriesPerUser, MaxStreamingQueries,
// MaxStreamingQueriesPerUser). A connection holds its slot from accept to close — idle
// connections count. Callers who are not administrators (Security.Admins) are admitted only
// while AdminReservedQueries slots of each global limit stay free, so no number of
// unprivileged users can lock the operator out; root is exempt from the per-user limits.
class Admissions {
public:
    class Ticket {
    public:
        Ticket() = default;
        Ticket(Ticket&& o) noexcept { *this = std::move(o); }
        Ticket& operator=(Ticket&& o) noexcept;
        ~Ticket() { release(); }
        // Take a streaming slot too, or the refusal text (counted in `counters`).
        base::Status add_stream(const ServerLimits& limits, QueryCounters& counters);
        void release();

    private:
        friend class Admissions;
        Admissions* owner_ = nullptr;
        uid_t uid_ = 0;
        bool admin_ = false;
        bool streaming_ = false;
    };

    // A slot for a new connection of `uid` (`admin`: may use the reserved slots), or the
    // refusal text.
    base::Result<Ticket> admit(uid_t uid, bool admin, const ServerLimits& limits, QueryCounters& counters);
    uint32_t active() const;
    uint32_t streaming() const;

private:
    struct PerUser {
        uint32_t connections = 0;
        uint32_t streams = 0;
    };
    mutable std::mutex mutex_;
    uint32_t active_ = 0;
    uint32_t streaming_ = 0;
    std::map<uid_t, PerUser> per_user_;
};

// Adaptive indexing as the sessions see it (PSD-008 §8.6.5, §8.2.7); the daemon wires them to
// eventd/index/. Either may be empty (a server without a daemon, in tests).
struct IndexHooks {
    // Every EVENTS query its caller may run over types it can read (issue 23: nothing counted
    // for types the caller cannot see, nor for fields it may not use): count the fields it
    // filters on, within the caller's budget (eventd/index/field_counter.hpp).
    std::function<void(const query::Query&, const access::Caller&, bool admin)> count;
    // EVENTS INDEX: authorise `caller` against admin_sd, add `field`, return once persisted.
    std::function<base::Status(const access::Caller& caller, const std::string& field,
                               std::chrono::steady_clock::time_point deadline)>
        add;
};

// State every session shares with the server.
struct ServerShared {
    std::filesystem::path store_dir;
    access::PolicyHolder* policy = nullptr;
    std::atomic<uint64_t> policy_generation{0};  // bumped on reload: streams reset their access
    std::atomic<bool> stopping{false};           // shutdown: the executor's cancel flag
    std::unique_ptr<CommitSignal> signal;
    // Seals every cursor the server issues and opens those clients bring (store/cursor_key.hpp).
    std::optional<store::CursorKey> cursor_key;
    QueryCounters counters;
    Admissions admissions;
    // The daemon's STATUS records (rings, shards, rates); the server adds {kind:"queries"}.
    std::function<std::vector<nlohmann::json>()> daemon_status;
    IndexHooks index;

    ServerLimits limits() const {
        std::lock_guard lock(limits_mutex);
        return limits_;
    }
    void set_limits(const ServerLimits& l) {
        std::lock_guard lock(limits_mutex);
        limits_ = l;
    }
    nlohmann::json queries_record() const;

private:
    mutable std::mutex limits_mutex;
    ServerLimits limits_;
};

// Run the query of `request` on the connected socket `fd` for `caller`; returns when the
// query (or stream) is over. The socket is shut down (the client sees EOF) but not closed: the server
// closes it after joining this thread, so a shutdown() from stop() never hits a reused fd.
void run_session(ServerShared& shared, int fd, const access::Caller& caller, const Request& request,
                 Admissions::Ticket& ticket);

}  // namespace eventd::server
