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

inline kmes::Error timeout_error(uint32_t timeout_ms) {
    return kmes::Error{kmes::ErrorCode::timed_out, timeout_text(timeout_ms)};
}

inline kmes::Error shutdown_error() { return kmes::Error{kmes::ErrorCode::cancelled, kShuttingDownText}; }

}  // namespace eventd::query
