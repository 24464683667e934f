// The query language (PSD-008 §8.6.1–§8.6.3) over arbitrary text: lexer, parser, planner, and
// the SQL store/ writes for the plan. A text that parses must also plan or fail cleanly:
//   - nothing throws; every error is EINVAL (parser.hpp, planner.hpp);
//   - no error message carries SQL or SQLite's words (the client sees them as they are) —
//     unless the query text itself contains the word, which a message may quote;
//   - every plan becomes SQL that SQLite prepares on the real schema with eventd's SQL
//     functions registered, with one bound parameter per `?` (store/read_sql.hpp).
// Both plans are made: the initial result (root, and restricted by the access policy) and a
// stream's live reads.
#include <sqlite3.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>

#include "check.hpp"
#include "eventd/query_language/parser.hpp"
#include "eventd/query/planner.hpp"
#include "store/event_columns.hpp"
#include "store/msgpack_extract.hpp"
#include "store/read_sql.hpp"
#include "store/sql_functions.hpp"

namespace {

constexpr int64_t kNowNs = 1'764'000'000'000'000'000;  // 2025-11-24, for "1h ago" and "today"

// An empty shard with every function a read calls: the planner's SQL must prepare on it.
struct Shard {
    sqlite3* db = nullptr;
    eventd::store::RowFilter visible = [](const eventd::store::RowSubject&) { return true; };

    Shard() {
        FUZZ_CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK);
        // The events table as shards create it (create_schema itself wants WAL: a real file).
        FUZZ_CHECK(sqlite3_exec(db, eventd::store::create_events_sql().c_str(), nullptr, nullptr, nullptr) == SQLITE_OK);
        FUZZ_CHECK(eventd::store::register_msgpack_extract(db).ok());
        FUZZ_CHECK(eventd::store::register_aggregate_functions(db).ok());
        FUZZ_CHECK(eventd::store::register_visibility(db, &visible).ok());
    }
    ~Shard() { sqlite3_close(db); }
};

// Words of SQL and of SQLite's messages that no query error may show unless the query has them.
constexpr std::string_view kSqlWords[] = {"SELECT ", "FROM events", "msgpack_extract", "eventd_visible", "eventd_num_",
                                          "COLLATE",  "sqlite",      "SQLITE",          "ESCAPE",         "GROUP BY g"};

void check_error(const base::Error& error, std::string_view text, const char* stage) {
    FUZZ_CHECK_MSG(error.code == base::ErrorCode::invalid, std::string(stage) + ": " + error.message);
    for (std::string_view word : kSqlWords) {
        if (error.message.find(word) != std::string::npos && text.find(word) == std::string_view::npos)
            FUZZ_FAIL("an error message shows SQL", std::string(stage) + ": " + error.message);
    }
}

void check_plan(const Shard& shard, const eventd::query::Plan& plan) {
    const eventd::store::SqlText sql = eventd::store::read_sql(plan.read);
    sqlite3_stmt* stmt = nullptr;
    const int rc = sqlite3_prepare_v2(shard.db, sql.sql.c_str(), -1, &stmt, nullptr);
    FUZZ_CHECK_MSG(rc == SQLITE_OK, std::string(sqlite3_errmsg(shard.db)) + "\n  in: " + sql.sql);
    FUZZ_CHECK_MSG(sqlite3_bind_parameter_count(stmt) == static_cast<int>(sql.params.size()), sql.sql);
    sqlite3_finalize(stmt);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static Shard shard;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        auto query = eventd::query::parse(text, kNowNs);
        if (!query) {
            check_error(query.error(), text, "parse");
            return 0;
        }
        for (const bool restricted : {false, true}) {
            auto plan = eventd::query::plan_query(*query, restricted);
            if (plan) {
                check_plan(shard, *plan);
            } else {
                check_error(plan.error(), text, "plan_query");
            }
        }
        auto live = eventd::query::plan_live(*query, true);
        if (live) {
            check_plan(shard, *live);
        } else {
            check_error(live.error(), text, "plan_live");
        }
    } catch (const std::exception& e) {
        FUZZ_FAIL("the query pipeline threw", e.what());
    }
    return 0;
}
