#include "eventd/server/server_shared.hpp"

#include "protocol/status.hpp"

namespace eventd::server {

using json = nlohmann::json;

json ServerShared::queries_record() const {
    const auto& c = counters;
    const uint64_t concurrency = c.refused_concurrency.load(), streaming = c.refused_streaming.load(),
                   per_user = c.refused_per_user.load(), streaming_per_user = c.refused_streaming_per_user.load();
    const ServerLimits l = limits();
    protocol::status::Queries q;
    q.active = admissions.active();
    q.streaming = admissions.streaming();
    q.accepted_total = c.accepted.load();
    q.refused_total = concurrency + streaming + per_user + streaming_per_user;
    q.refused_concurrency = concurrency;
    q.refused_streaming = streaming;
    q.refused_per_user = per_user;
    q.refused_streaming_per_user = streaming_per_user;
    q.waited_running_per_user = c.waited_running_per_user.load();
    q.over_group_budget = c.over_group_budget.load();
    q.timeouts = c.timeouts.load();
    q.dropped_streams = c.dropped_streams.load();
    q.errors = c.errors.load();
    q.max_concurrent_queries = l.max_concurrent_queries;
    q.max_streaming_queries = l.max_streaming_queries;
    q.max_queries_per_user = l.max_queries_per_user;
    q.max_streaming_queries_per_user = l.max_streaming_queries_per_user;
    q.admin_reserved_queries = l.admin_reserved_queries;
    q.max_running_queries_per_user = l.max_running_queries_per_user;
    q.max_query_group_bytes = l.max_query_group_bytes;
    return protocol::status::to_record(q);
}

}  // namespace eventd::server
