#include "support/stream_helpers.hpp"

#include <sched.h>

#include <cerrno>

#include <catch2/catch.hpp>

#include "kmes/kmes.h"
#include "support/eventually.hpp"

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
    const auto emitted = [&] {
        if (kmes_emit(type.data(), uint16_t(type.size()), bytes.data(), uint32_t(bytes.size())) == 0) return true;
        INFO("kmes_emit " << type << ": errno " << errno);
        REQUIRE(errno == EAGAIN);  // the ring is full: again
        return false;
    };
    INFO("kmes_emit " << type << ": EAGAIN for 10 s");
    REQUIRE(test_support::eventually(emitted, seconds(10), milliseconds(2)));
}

int64_t count(QueryEnv& env, const std::string& query) {
    const RunResult r = env.query(query);
    if (r.exit_code != 0) return -1;
    const auto records = parse_jsonl(r.out);
    return records.size() == 1 ? records[0].value("count", int64_t(-1)) : -1;
}

int64_t await_count(QueryEnv& env, const std::string& query, int64_t expected, seconds timeout) {
    int64_t n = 0;
    test_support::eventually([&] { return (n = count(env, query)) == expected; }, timeout, milliseconds(100));
    return n;
}

std::vector<json> status_records(QueryEnv& env) {
    const RunResult r = env.query("STATUS");
    INFO(r.out);
    REQUIRE(r.exit_code == 0);
    return parse_jsonl(r.out);
}

EnvOptions fast_commits(json extra) {
    json o = {{"MaxBatchLatencyMs", 20}};
    for (auto it = extra.begin(); it != extra.end(); ++it) o[it.key()] = it.value();
    return EnvOptions{.eventd = o};
}

}  // namespace eventd::query_it
