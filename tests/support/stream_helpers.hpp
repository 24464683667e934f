// What the tests that emit into a QueryEnv share (the query suite's streams, resume, leaks and
// access; the forwarder and collector tests): emitting through the real shim from CPU 0 (one
// ring, one shard, one commit order), counting as root, fast commits.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "support/query_env.hpp"
#include "protocol/status.hpp"

#include <catch2/catch.hpp>

namespace eventd::query_it {

// Emit one event on the ring of CPU 0 (the calling thread is pinned there), retrying while the
// shim's rate limit says EAGAIN.
void emit(const std::string& type, const nlohmann::json& payload);

// The COUNT of `query` as root (-1 on failure).
int64_t count(QueryEnv& env, const std::string& query);

// count() until it is `expected` or `timeout` passed; the last count.
int64_t await_count(QueryEnv& env, const std::string& query, int64_t expected, std::chrono::seconds timeout);

// STATUS as root: its records (REQUIREs success).
std::vector<nlohmann::json> status_records(QueryEnv& env);

// The STATUS record of kind R (protocol/status.hpp: status_of<protocol::status::Queries>(env)),
// read through the schema; FAILs without one or when it does not read as R.
template <class R>
R status_of(QueryEnv& env) {
    const auto records = status_records(env);
    for (const nlohmann::json& rec : records) {
        if (protocol::status::kind_of(rec) != R::kind) continue;
        auto typed = protocol::status::from_record<R>(rec);
        INFO(rec.dump());
        REQUIRE(typed.ok());
        return *typed;
    }
    FAIL("no {kind: " << R::kind << "} record in STATUS");
    return {};
}

// MaxBatchLatencyMs 20 (commits, and so stream frames, follow emits quickly) plus `extra`.
EnvOptions fast_commits(nlohmann::json extra = nlohmann::json::object());

}  // namespace eventd::query_it
