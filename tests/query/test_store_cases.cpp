// The query tables (tests/query/cases/*.test) run in-process, as DuckDB runs its sqllogictest
// files: the parser, the planner and the executor (query::execute) straight against the fixture
// store written with store::ShardDb — no daemon, no socket, no root. Records are written as
// eventctl --format jsonl writes them (eventctl's own writer), so the same expectations hold.
// The end-to-end run through eventctl and eventd ([cases], test_cases.cpp) stays as the check
// that the daemon, the wire and eventctl add nothing and lose nothing.
//
// The daemon adds its own synthetic.startup/shutdown rows, which this store does not hold: a
// table whose expectation depends on them is marked by a query that excludes synthetic.* or
// filters on a column synthetic rows leave NULL, so both runners agree.
#include <cstdlib>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <string>

#include "case_check.hpp"
#include "case_file.hpp"
#include "eventctl/json_record.hpp"
#include "eventd/access/policy.hpp"
#include "eventd/query/executor.hpp"
#include "eventd/query/parser.hpp"
#include "fixture_store.hpp"
#include "tests/eventd_unit/unit_util.hpp"

namespace eventd::query_it {
namespace {

namespace fs = std::filesystem;

int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// What eventctl would have shown for `text`, run as root against `store`.
RunResult run_in_process(const fs::path& store, const std::string& text) {
    RunResult r;
    r.exit_code = 1;
    auto parsed = query::parse(text, now_ns());
    if (!parsed) {
        r.err = parsed.error().message;
        return r;
    }
    if (parsed->mode != query::Mode::events) {
        r.err = "(in-process runner: STATUS needs a daemon)";
        return r;
    }
    auto policy = access::Policy::parse(nullptr);
    REQUIRE(policy.ok());
    access::CallerAccess access(access::Caller{}, *policy);  // root
    if (auto st = access.check_query(*parsed); !st) {
        r.err = st.error().message;
        return r;
    }
    query::ExecutionContext ctx;
    ctx.store_dir = store;
    ctx.access = &access;
    ctx.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    ctx.timeout_ms = 30000;
    std::string out;
    const query::RecordSink sink = [&out](std::span<const uint8_t> record) -> kmes::Status {
        if (auto st = eventctl::append_json_record(out, record); !st) return st;
        out += '\n';
        return {};
    };
    auto done = query::execute(*parsed, ctx, sink);
    if (!done) {
        r.err = done.error().message;
        return r;
    }
    r.exit_code = 0;
    r.out = std::move(out);
    return r;
}

std::string env_path(const char* name) {
    const char* value = std::getenv(name);
    if (!value || !*value) FAIL(std::string(name) + " is not set: run the tests through `meson test`");
    return value;
}

TEST_CASE("every query table gives its exact records or error in-process against the store", "[store-cases]") {
    eventd_unit::TempDir dir;
    build_fixture_store(dir.path().string());
    size_t total = 0, passed = 0;
    for (const std::string& file : case_files(env_path("QUERY_CASES_DIR"))) {
        for (const QueryCase& c : parse_case_file(file)) {
            REQUIRE(c.user.empty());  // the access tables need real users: they run end to end only
            ++total;
            const auto failure = check_outcome(c, run_in_process(dir.path(), c.text));
            if (!failure) {
                ++passed;
                continue;
            }
            INFO(*failure);
            CHECK(false);
        }
    }
    std::cout << "in-process: " << passed << " of " << total << " cases pass\n";
    CHECK(total > 0);
}

}  // namespace
}  // namespace eventd::query_it
