// AggregateMerger's group budget (MaxQueryGroupBytes, issue 40): the cost it counts per group
// against what the heap really holds, the error when a query's groups pass the budget, and
// finish() handing records out one at a time. Rows come from a real SQLite statement, as a
// shard's aggregate query returns them: the group key, then its count.
#include <catch2/catch.hpp>

#include <malloc.h>
#include <sqlite3.h>

#include <cstdint>
#include <string>

#include "eventd/query/merge.hpp"
#include "eventd/query/planner.hpp"
#include "eventd/query_language/parser.hpp"
#include "store/row_view.hpp"

namespace {

using namespace eventd;

// `rows` rows of (key, 1): keys `<n % distinct, 10 digits>-key` padded to `key_bytes`, from an in-memory
// database (a recursive CTE: nothing stored).
class KeyRows {
public:
    KeyRows(int64_t rows, int64_t distinct, int key_bytes) {
        REQUIRE(sqlite3_open(":memory:", &db_) == SQLITE_OK);
        const std::string sql = "WITH RECURSIVE n(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM n WHERE x + 1 < " +
                                std::to_string(rows) + ") SELECT substr(printf('%010d-key', x % " +
                                std::to_string(distinct) + ") || '" + std::string(static_cast<size_t>(key_bytes), '.') +
                                "', 1, " + std::to_string(key_bytes) + "), 1 FROM n";
        REQUIRE(sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt_, nullptr) == SQLITE_OK);
    }
    ~KeyRows() {
        sqlite3_finalize(stmt_);
        sqlite3_close(db_);
    }
    bool next() { return sqlite3_step(stmt_) == SQLITE_ROW; }
    store::RowView row() const { return store::RowView(stmt_); }

private:
    sqlite3* db_ = nullptr;
    sqlite3_stmt* stmt_ = nullptr;
};

query::Query group_query(const std::string& text) {
    auto q = query::parse(text, 0);
    REQUIRE(q.ok());
    return *q;
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitizedAllocator = true;  // GCC
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitizedAllocator = true;  // clang
#else
constexpr bool kSanitizedAllocator = false;
#endif
#else
constexpr bool kSanitizedAllocator = false;
#endif

// Bytes malloc has handed out and not had back (this thread's arena: the test's only one),
// less SQLite's own, so that the statement's pages are not counted as groups.
int64_t heap_in_use() {
    return static_cast<int64_t>(mallinfo2().uordblks) - static_cast<int64_t>(sqlite3_memory_used());
}

}  // namespace

TEST_CASE("the cost the group budget counts is what the groups take on the heap, up to finish()'s peak",
          "[merge][budget]") {
    // Keys inside and beyond std::string's own buffer (15 bytes here).
    const int key_bytes = GENERATE(12, 40);
    INFO("key of " << key_bytes << " bytes");
    const query::Query q = group_query("EVENTS GROUP user COUNT");
    auto plan = query::plan_query(q, false);
    REQUIRE(plan.ok());
    REQUIRE(plan->group_columns == 1);
    constexpr int64_t kGroups = 100000;
    KeyRows rows(kGroups, kGroups, key_bytes);
    REQUIRE(rows.next());  // SQLite's statement set up before the baseline
    const int64_t before = heap_in_use();
    {
        query::AggregateMerger merger(q, *plan);
        do {
            REQUIRE(merger.add_row(rows.row()).ok());
        } while (rows.next());
        const auto counted = static_cast<int64_t>(merger.group_bytes());
        const int64_t held = heap_in_use() - before;
        int64_t peak = 0;  // at the first record: finish()'s sort entries exist, and one record
        int64_t emitted = 0;
        REQUIRE(merger
                    .finish([&](const query::Record&) {
                        if (emitted++ == 0) peak = heap_in_use() - before;
                        return base::Status{};
                    })
                    .ok());
        INFO("counted " << counted << " B, held by the groups " << held << " B, at finish()'s peak " << peak << " B");
        CHECK(emitted == kGroups);
        // The budget must not undercount what is really taken (the point of it), nor count
        // so much more that a query is refused for memory it would not use. (Measured: equal
        // at the peak; the groups alone 80 % and 83 % of it, the sort entries the rest.) The cost
        // is glibc's; under a sanitizer its allocator replaces malloc and mallinfo2() sees none
        // of it, so the sanitizer lanes check the rest and the normal and release lanes this.
        if (!kSanitizedAllocator) {
            CHECK(peak <= counted + counted / 20);
            CHECK(held >= counted * 3 / 4);
        }
    }
}

TEST_CASE("a query whose groups pass MaxQueryGroupBytes ends with an error naming it; known groups cost nothing",
          "[merge][budget]") {
    const query::Query q = group_query("EVENTS GROUP user COUNT");
    auto plan = query::plan_query(q, false);
    REQUIRE(plan.ok());
    constexpr uint64_t kBudget = 1 << 20;

    SECTION("new groups past the budget") {
        query::AggregateMerger merger(q, *plan, kBudget);
        KeyRows rows(100000, 100000, 12);
        base::Status last;
        int64_t added = 0;
        while (rows.next()) {
            last = merger.add_row(rows.row());
            if (!last) break;
            ++added;
        }
        REQUIRE_FALSE(last.ok());
        CHECK(last.error().code == base::ErrorCode::no_memory);
        CHECK_THAT(last.error().message, Catch::Contains("MaxQueryGroupBytes (1048576 bytes)") &&
                                             Catch::Contains("after " + std::to_string(added) + " groups"));
        CHECK(merger.group_bytes() <= kBudget);
        CHECK(merger.group_bytes() + query::AggregateMerger::group_cost({store::SqlValue{}}) > kBudget / 2);
    }
    SECTION("the same ten groups over and over") {
        query::AggregateMerger merger(q, *plan, kBudget);
        KeyRows rows(200000, 10, 12);
        while (rows.next()) REQUIRE(merger.add_row(rows.row()).ok());
        int64_t total = 0;
        REQUIRE(merger
                    .finish([&](const query::Record& r) {
                        total += r.at("count").get<int64_t>();
                        return base::Status{};
                    })
                    .ok());
        CHECK(total == 200000);
    }
}

TEST_CASE("finish() hands out records one at a time and stops at the first error", "[merge]") {
    const query::Query q = group_query("EVENTS GROUP user COUNT");
    auto plan = query::plan_query(q, false);
    REQUIRE(plan.ok());
    query::AggregateMerger merger(q, *plan);
    KeyRows rows(50, 50, 12);
    while (rows.next()) REQUIRE(merger.add_row(rows.row()).ok());
    int calls = 0;
    const base::Status st = merger.finish([&](const query::Record&) {
        ++calls;
        return base::Status(base::Error{base::ErrorCode::broken_pipe, "the client left"});
    });
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().message == "the client left");
    CHECK(calls == 1);
}
