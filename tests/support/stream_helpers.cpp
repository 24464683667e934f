#include "support/stream_helpers.hpp"

#include <sched.h>

#include <cerrno>
#include <thread>

#include <catch2/catch.hpp>

#include "kmes/kmes.h"

namespace eventd::query_it {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

void emit(const std::string& type, const json& payload) {
    static const bool pinned = [] {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(0, &set);
        return sched_setaffinity(0, sizeof set, &set) == 0;
    }();
    REQUIRE(pinned);
    const auto bytes = json::to_msgpack(payload);
    const auto deadline = std::chrono::steady_clock::now() + seconds(10);
    while (kmes_emit(type.data(), uint16_t(type.size()), bytes.data(), uint32_t(bytes.size())) != 0) {
        INFO("kmes_emit " << type << ": errno " << errno);
        REQUIRE(errno == EAGAIN);
        REQUIRE(std::chrono::steady_clock::now() < deadline);
        std::this_thread::sleep_for(milliseconds(2));
    }
}

int64_t count(QueryEnv& env, const std::string& query) {
    const RunResult r = env.query(query);
    if (r.exit_code != 0) return -1;
    const auto records = parse_jsonl(r.out);
    return records.size() == 1 ? records[0].value("count", int64_t(-1)) : -1;
}

int64_t await_count(QueryEnv& env, const std::string& query, int64_t expected, seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    int64_t n = count(env, query);
    while (n != expected && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(milliseconds(100));
        n = count(env, query);
    }
    return n;
}

json status_record(QueryEnv& env, const std::string& kind) {
    const RunResult r = env.query("STATUS");
    REQUIRE(r.exit_code == 0);
    for (const json& rec : parse_jsonl(r.out))
        if (rec.value("kind", "") == kind) return rec;
    FAIL("no {kind: " << kind << "} record in STATUS: " << r.out);
    return {};
}

EnvOptions fast_commits(json extra) {
    json o = {{"MaxBatchLatencyMs", 20}};
    for (auto it = extra.begin(); it != extra.end(); ++it) o[it.key()] = it.value();
    return EnvOptions{.eventd = o};
}

}  // namespace eventd::query_it
