// What the query server lets in (PSD-008 §12.1 and ours): the query limits, the counters of
// every refusal and drop (`eventctl status`), and the slots each connection and stream holds.
#pragma once

#include <sys/types.h>

#include <atomic>
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

}  // namespace eventd::server
