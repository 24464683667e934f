#include "eventd/server/server_shared.hpp"

namespace eventd::server {

using json = nlohmann::json;

json ServerShared::queries_record() const {
    const auto& c = counters;
    const uint64_t concurrency = c.refused_concurrency.load(), streaming = c.refused_streaming.load(),
                   per_user = c.refused_per_user.load(), streaming_per_user = c.refused_streaming_per_user.load();
    const ServerLimits l = limits();
    return json{{"kind", "queries"},
                {"active", admissions.active()},
                {"streaming", admissions.streaming()},
                {"accepted_total", c.accepted.load()},
                {"refused_total", concurrency + streaming + per_user + streaming_per_user},
                {"refused_concurrency", concurrency},
                {"refused_streaming", streaming},
                {"refused_per_user", per_user},
                {"refused_streaming_per_user", streaming_per_user},
                {"timeouts", c.timeouts.load()},
                {"dropped_streams", c.dropped_streams.load()},
                {"errors", c.errors.load()},
                {"max_concurrent_queries", l.max_concurrent_queries},
                {"max_streaming_queries", l.max_streaming_queries},
                {"max_queries_per_user", l.max_queries_per_user},
                {"max_streaming_queries_per_user", l.max_streaming_queries_per_user},
                {"admin_reserved_queries", l.admin_reserved_queries}};
}

}  // namespace eventd::server
