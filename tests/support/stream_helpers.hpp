// What the tests that emit into a QueryEnv share (the query suite's streams, resume, leaks and
// access; the forwarder and collector tests): emitting through the real shim from CPU 0 (one
// ring, one shard, one commit order), counting as root, fast commits.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "support/query_env.hpp"

namespace eventd::query_it {

// Emit one event on the ring of CPU 0 (the calling thread is pinned there), retrying while the
// shim's rate limit says EAGAIN.
void emit(const std::string& type, const nlohmann::json& payload);

// The COUNT of `query` as root (-1 on failure).
int64_t count(QueryEnv& env, const std::string& query);

// count() until it is `expected` or `timeout` passed; the last count.
int64_t await_count(QueryEnv& env, const std::string& query, int64_t expected, std::chrono::seconds timeout);

// The record of kind `kind` ("queries", "store", …) in STATUS, asked as root; FAILs without one.
nlohmann::json status_record(QueryEnv& env, const std::string& kind);

// MaxBatchLatencyMs 20 (commits, and so stream frames, follow emits quickly) plus `extra`.
EnvOptions fast_commits(nlohmann::json extra = nlohmann::json::object());

}  // namespace eventd::query_it
