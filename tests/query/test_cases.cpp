// [cases]: every query table in tests/query/cases/*.test through the real eventctl, against a
// real eventd on the fixture store (StorageShards 2 + the historical shard-0002.db), as root.
// Afterwards the store is intact: the injection attempts in the tables changed nothing.
#include <sqlite3.h>

#include <catch2/catch.hpp>

#include "case_runner.hpp"
#include "query_env.hpp"

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

}  // namespace
}  // namespace eventd::query_it
