// The errors a query ends with that are not about the query itself: its deadline passed, or
// eventd is stopping. Spelled once here so the executor, the session and the tests agree on
// the text (§8.6.7 QueryTimeoutMs) and on the code: a shutdown is ErrorCode::cancelled, which
// `eventctl status` never counts as a failed query.
#pragma once

#include <cstdint>
#include <string>

#include "base/result.hpp"

namespace eventd::query {

inline constexpr const char* kShuttingDownText = "eventd is shutting down";

inline std::string timeout_text(uint32_t timeout_ms) {
    return "query timed out after " + std::to_string(timeout_ms) + " ms (QueryTimeoutMs)";
}

inline base::Error timeout_error(uint32_t timeout_ms) {
    return base::Error{base::ErrorCode::timed_out, timeout_text(timeout_ms)};
}

// eventd cannot open the shard files a query needs because it is at its RLIMIT_NOFILE (its
// connections, shard files and WAL files hold every descriptor). Only this query fails;
// ingestion goes on with the descriptors the writers already hold.
inline constexpr const char* kOutOfDescriptorsText =
    "eventd is out of file descriptors and cannot open the event store for this query; try again when "
    "fewer connections are open (or raise eventd's RLIMIT_NOFILE, LimitNOFILE= in its unit)";

// The connection itself could not be kept: accepted on the reserve descriptor (query_server.cpp),
// told this, and closed.
inline constexpr const char* kNoDescriptorForConnectionText =
    "eventd is out of file descriptors and cannot take this connection now; try again when fewer connections "
    "are open (or raise eventd's RLIMIT_NOFILE, LimitNOFILE= in its unit)";

inline base::Error out_of_descriptors_error() { return base::Error{base::ErrorCode::too_many_files, kOutOfDescriptorsText}; }

inline base::Error shutdown_error() { return base::Error{base::ErrorCode::cancelled, kShuttingDownText}; }

}  // namespace eventd::query
