// [cases]: every query table in tests/query/cases/*.test through the real eventctl, against a
// real eventd on the fixture store (StorageShards 2 + the historical shard-0002.db), as root.
// Afterwards the store is intact: the injection attempts in the tables changed nothing. And the
// other ways eventctl takes a query: --file, '-' and --file - (stdin), with their usage errors.
#include <sqlite3.h>

#include <fstream>

#include <catch2/catch.hpp>

#include "case_runner.hpp"
#include "support/query_env.hpp"

namespace eventd::query_it {
namespace {

// Rows of every shard file other than eventd's own synthetic.* records.
int64_t fixture_rows(const std::string& store) {
    int64_t total = 0;
    for (const char* name : {"shard-0000.db", "shard-0001.db", "shard-0002.db"}) {
        sqlite3* db = nullptr;
        const std::string path = store + "/" + name;
        REQUIRE(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
        sqlite3_stmt* stmt = nullptr;
        REQUIRE(sqlite3_prepare_v2(db, "SELECT count(*) FROM events WHERE event_type NOT LIKE 'synthetic.%'", -1, &stmt,
                                   nullptr) == SQLITE_OK);
        REQUIRE(sqlite3_step(stmt) == SQLITE_ROW);
        total += sqlite3_column_int64(stmt, 0);
        sqlite3_finalize(stmt);
        sqlite3_close(db);
    }
    return total;
}

TEST_CASE("every query table gives its exact expected records or error", "[cases]") {
    QueryEnv env;
    run_case_dir(env, cases_dir());
    env.stop_eventd();
    CHECK(fixture_rows(env.store()) == int64_t(env.fixture().events));
}

TEST_CASE("eventctl reads the query from a file or standard input; a bad query file is a usage error", "[cases]") {
    QueryEnv env;
    const std::string query = "EVENTS app.login WHERE user == \"carol\" SELECT user, method";
    const std::vector<nlohmann::json> expected = {{{"user", "carol"}, {"method", "sso"}}};
    const std::vector<std::string> base = {env.eventctl(), "--socket", env.socket(), "--format", "jsonl"};
    auto with = [&](std::vector<std::string> extra) {
        std::vector<std::string> argv = base;
        argv.insert(argv.end(), extra.begin(), extra.end());
        return argv;
    };
    const std::string file = env.dir() + "/query.txt";
    std::ofstream(file) << query << "\n";  // a trailing newline, as editors write it
    for (const auto& [how, argv, input] : std::vector<std::tuple<std::string, std::vector<std::string>, std::string>>{
             {"--file FILE", with({"--file", file}), ""},
             {"-f FILE", with({"-f", file}), ""},
             {"'-' (stdin)", with({"-"}), query},
             {"--file - (stdin)", with({"--file", "-"}), query + "\n"}}) {
        INFO(how);
        const RunResult r = run_command(argv, std::chrono::seconds(20), input);
        INFO(r.err);
        CHECK(r.exit_code == 0);
        CHECK(parse_jsonl(r.out) == expected);
    }
    // Usage errors (exit 2), nothing on stdout, the reason on stderr.
    const std::string binary = env.dir() + "/binary.txt";
    std::ofstream(binary) << "EVENTS \xff\xfe TAKE 1";
    for (const auto& [how, argv, reason] : std::vector<std::tuple<std::string, std::vector<std::string>, std::string>>{
             {"a missing file", with({"--file", env.dir() + "/absent.txt"}), "absent.txt"},
             {"a file that is not UTF-8", with({"--file", binary}), "UTF-8"},
             {"a file and a query", with({"--file", file, "EVENTS TAKE 1"}), ""},
             {"no query at all", base, ""}}) {
        INFO(how);
        const RunResult r = run_command(argv, std::chrono::seconds(20), "");
        INFO(r.err);
        CHECK(r.exit_code == 2);
        CHECK(r.out.empty());
        CHECK_FALSE(r.err.empty());
        if (!reason.empty()) CHECK_THAT(r.err, Catch::Contains(reason));
    }
}

}  // namespace
}  // namespace eventd::query_it
