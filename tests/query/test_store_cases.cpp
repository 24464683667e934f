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
#include <fstream>
#include <set>
#include <iostream>
#include <string>

#include "case_check.hpp"
#include "case_file.hpp"
#include "eventctl/json_record.hpp"
#include "eventd/access/policy.hpp"
#include "eventd/query/executor.hpp"
#include "eventd/query_language/parser.hpp"
#include "plan_explain.hpp"
#include "store/secondary_index.hpp"
#include "store/shard_db.hpp"
#include "support/fixture_store.hpp"
#include "support/temp_dir.hpp"

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
    const query::RecordSink sink = [&out](std::span<const uint8_t> record) -> base::Status {
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

// Every payload path of the fixture that an index may be built on ("source.name" …).
void collect_paths(const nlohmann::json& value, const std::string& prefix, std::set<std::string>& out) {
    if (!value.is_object()) return;
    for (const auto& [key, child] : value.items()) {
        const std::string path = prefix.empty() ? key : prefix + "." + key;
        if (!store::is_valid_payload_path(path)) continue;
        out.insert(path);
        collect_paths(child, path, out);
    }
}

// Every candidate index of §3.3.6 — the seven header columns and every payload path the
// fixture has — built into every shard file of the store, as the writers would build them.
void build_every_index(const fs::path& dir) {
    std::set<std::string> paths;
    std::ifstream in(env_path("QUERY_FIXTURE"));
    for (std::string line; std::getline(in, line);) {
        if (!line.empty()) collect_paths(nlohmann::json::parse(line).value("payload", nlohmann::json()), "", paths);
    }
    std::vector<store::SecondaryIndex> indexes;
    for (const auto& column : store::kEventColumns) {
        if (store::is_index_candidate(column.column)) indexes.push_back({std::string(column.name), false});
    }
    for (const std::string& path : paths) indexes.push_back({path, true});
    for (uint32_t shard = 0; shard < 3; ++shard) {
        auto db = store::ShardDb::open(dir, shard);
        REQUIRE(db.ok());
        for (const auto& index : indexes) {
            auto sql = store::create_index_sql(index);
            REQUIRE(sql);
            REQUIRE((*db)->run_index_statement(*sql, [] { return false; }).ok());
        }
        auto listed = (*db)->secondary_indexes();
        REQUIRE(listed.ok());
        CHECK(listed->size() == indexes.size());
    }
}

// Runs every table against `dir`; returns (passed, total).
std::pair<size_t, size_t> run_every_table(const fs::path& dir) {
    size_t total = 0, passed = 0;
    for (const std::string& file : case_files(env_path("QUERY_CASES_DIR"))) {
        for (const QueryCase& c : parse_case_file(file)) {
            REQUIRE(c.user.empty());  // the access tables need real users: they run end to end only
            ++total;
            const auto failure = check_outcome(c, run_in_process(dir, c.text));
            if (!failure) {
                ++passed;
                continue;
            }
            INFO(*failure);
            CHECK(false);
        }
    }
    return {passed, total};
}

TEST_CASE("every query table gives its exact records or error in-process against the store", "[store-cases]") {
    test_support::TempDir dir;
    build_fixture_store(dir.str());
    const auto [passed, total] = run_every_table(dir.path());
    std::cout << "in-process: " << passed << " of " << total << " cases pass\n";
    CHECK(total > 0);
}

// Issue 10: an index changes how fast, never what. The same tables against the same store
// with every candidate index present must give the same records in the same order.
TEST_CASE("every query table gives the same results with every candidate index present", "[store-cases]") {
    test_support::TempDir dir;
    build_fixture_store(dir.str());
    build_every_index(dir.path());
    const auto [passed, total] = run_every_table(dir.path());
    std::cout << "in-process, every index present: " << passed << " of " << total << " cases pass\n";
    CHECK(total > 0);
}

// What SQLite does with the planner's SQL when the index exists (EXPLAIN QUERY PLAN): the
// payload path written as a literal and the NOCASE collation make the expression index usable.
TEST_CASE("the planner's SQL searches the secondary indexes", "[store-cases]") {
    test_support::TempDir dir;
    build_fixture_store(dir.str());
    build_every_index(dir.path());
    const std::pair<const char*, const char*> cases[] = {
        {"EVENTS WHERE user == \"alice\"", "USING INDEX idx_events_payload_user (<expr>=?)"},
        {"EVENTS WHERE user == \"alice\" TAKE 100", "USING INDEX idx_events_payload_user (<expr>=?)"},
        {"EVENTS WHERE user IN (\"alice\", \"bob\") COUNT", "USING INDEX idx_events_payload_user (<expr>=?)"},
        {"EVENTS WHERE attempts > 2 TAKE 5", "USING INDEX idx_events_payload_attempts (<expr>>? AND <expr><?)"},
        {"EVENTS WHERE attempts <= 2 COUNT", "USING INDEX idx_events_payload_attempts (<expr><?)"},
        {"EVENTS WHERE user STARTS_WITH \"al\" TAKE 5", "USING INDEX idx_events_payload_user (<expr>>? AND <expr><?)"},
        {"EVENTS WHERE source.name == \"web-1\" COUNT BY bytes",
         "USING INDEX idx_events_payload_source_name (<expr>=?)"},
        {"EVENTS app.login COUNT", "USING COVERING INDEX idx_events_event_type (event_type=?)"},
        {"EVENTS kacs.* TAKE 3", "USING INDEX idx_events_event_type (event_type>? AND event_type<?)"},
        {"EVENTS WHERE cpu_id == 1 COUNT", "USING COVERING INDEX idx_events_cpu_id (cpu_id=?)"},
        {"EVENTS WHERE process_guid == \"c0000000-0000-4000-8000-000000000001\" TAKE 1",
         "USING INDEX idx_events_process_guid (process_guid=?)"},
    };
    for (const auto& [text, expected] : cases) {
        INFO(text);
        const std::string all = explain_query(dir.path() / "shard-0000.db", text);
        INFO(all);
        CHECK(all.find(expected) != std::string::npos);
    }
}

}  // namespace
}  // namespace eventd::query_it
