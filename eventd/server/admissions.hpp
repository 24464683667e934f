// What the query server lets in (PSD-008 §12.1 and ours): the query limits, the counters of
// every refusal and drop (`eventctl status`), and the slots each connection and stream holds.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>

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
    uint32_t user_query_nice = 19;  // a non-administrator's query thread runs at this nice (0: as root's)
    // Issue 40, one user's budget: queries of one non-administrator that read the store at once
    // (more wait for one to end), and the memory one aggregate query's groups may take.
    uint32_t max_running_queries_per_user = 2;
    uint64_t max_query_group_bytes = 67108864;
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
    std::atomic<uint64_t> waited_running_per_user{0};  // queries that waited for MaxRunningQueriesPerUser
    std::atomic<uint64_t> over_group_budget{0};        // queries ended by MaxQueryGroupBytes
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

    // A running slot (MaxRunningQueriesPerUser): held while one query of a user who is not an
    // administrator reads the store and sends its initial result; released by its destructor.
    class RunSlot {
    public:
        RunSlot() = default;
        RunSlot(RunSlot&& o) noexcept : owner_(o.owner_), uid_(o.uid_) { o.owner_ = nullptr; }
        RunSlot& operator=(RunSlot&&) = delete;
        ~RunSlot();

    private:
        friend class Admissions;
        Admissions* owner_ = nullptr;
        uid_t uid_ = 0;
    };

    // A slot for a new connection of `uid` (`admin`: may use the reserved slots), or the
    // refusal text.
    base::Result<Ticket> admit(uid_t uid, bool admin, const ServerLimits& limits, QueryCounters& counters);
    // A running slot for a query of `uid`: at once for an administrator (an empty slot), else
    // when fewer than MaxRunningQueriesPerUser of the user's queries run, waiting until then.
    // Errors: `deadline` passed (ErrorCode::timed_out; the caller words it) or `stopping` set
    // (ErrorCode::cancelled).
    base::Result<RunSlot> run_slot(uid_t uid, bool admin, const ServerLimits& limits,
                                   std::chrono::steady_clock::time_point deadline, const std::atomic<bool>& stopping,
                                   QueryCounters& counters);
    uint32_t active() const;
    uint32_t streaming() const;

private:
    struct PerUser {
        uint32_t connections = 0;
        uint32_t streams = 0;
        uint32_t running = 0;  // RunSlots held
    };
    mutable std::mutex mutex_;
    std::condition_variable slot_freed_;  // a RunSlot was released (waited on under mutex_)
    uint32_t active_ = 0;
    uint32_t streaming_ = 0;
    std::map<uid_t, PerUser> per_user_;
};

}  // namespace eventd::server
