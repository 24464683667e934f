// Issue 23 item 2, proved on the SQL itself: a restricted reader's predicates never run on a
// row it may not see. A shard holds hidden rows (`secret.bulk`, payload marked "hidden") and a
// few visible ones; read_sql's text for every shape runs on a plain connection where
// msgpack_extract is wrapped by a counter of the calls whose payload is a hidden row's, and
// eventd_visible hides `secret.*`. The count must be 0 — also with an index on the payload
// field the predicate names (an index scan would evaluate it on hidden rows' entries).
#include <sqlite3.h>

#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/msgpack_extract.hpp"
#include "store/read_sql.hpp"
#include "store/secondary_index.hpp"
#include "store_test_util.hpp"
#include "support/temp_dir.hpp"

namespace {

using eventd::store::Predicate;
using eventd::store::ReadField;
using eventd::store::ReadOp;
using eventd::store::ReadPlan;
using eventd::store::SqlParam;
using nlohmann::json;
using store_test::RawDb;
using test_support::TempDir;

constexpr int kHidden = 500;
constexpr int kVisible = 7;

struct Counts {
    int extract_on_hidden = 0;
    int extract_on_visible = 0;
};

// msgpack_extract as registered by the store, counted by the kind of row it reads.
void counting_extract(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
    auto* counts = static_cast<Counts*>(sqlite3_user_data(ctx));
    const auto* payload = static_cast<const char*>(sqlite3_value_blob(argv[0]));
    const int size = sqlite3_value_bytes(argv[0]);
    const bool hidden = payload && std::string_view(payload, size).find("hidden") != std::string_view::npos;
    ++(hidden ? counts->extract_on_hidden : counts->extract_on_visible);
    // The value itself from the store's own reader (integers and text are all `pin` holds).
    auto path = eventd::store::parse_extract_path(reinterpret_cast<const char*>(sqlite3_value_text(argv[1])));
    if (!path || !payload) return sqlite3_result_null(ctx);
    const auto value =
        eventd::store::msgpack_extract(reinterpret_cast<const uint8_t*>(payload), static_cast<size_t>(size), *path);
    if (const auto* i = std::get_if<int64_t>(&value)) return sqlite3_result_int64(ctx, *i);
    if (const auto* s = std::get_if<std::string>(&value))
        return sqlite3_result_text(ctx, s->data(), static_cast<int>(s->size()), SQLITE_TRANSIENT);
    (void)argc;
    sqlite3_result_null(ctx);
}

void visible(sqlite3_context* ctx, int, sqlite3_value** argv) {
    const auto* type = reinterpret_cast<const char*>(sqlite3_value_text(argv[0]));
    sqlite3_result_int(ctx, type && std::strncmp(type, "secret.", 7) != 0);
}

struct Shard {
    TempDir dir;
    std::filesystem::path file;
    Shard() {
        auto db = store_test::open_shard(dir.path());
        const auto boot = test_support::guid(0xb0);
        REQUIRE(db->begin().ok());
        uint64_t seq = 0;
        for (int i = 0; i < kHidden + kVisible; ++i) {
            ++seq;
            auto row = test_support::event_row({.boot = boot, .timestamp = 1000 + seq, .cpu = 0, .sequence = seq});
            const bool hidden = !(i % 71 == 0 && i / 71 < kVisible);  // 7 visible rows among the hidden
            row.event_type = hidden ? "secret.bulk" : "public.thing";
            row.payload = json::to_msgpack(hidden ? json{{"pin", 1234}, {"hidden", true}} : json{{"pin", 1}});
            REQUIRE(db->insert(row).ok());
        }
        REQUIRE(db->account(boot, 0, 1, seq).ok());
        REQUIRE(db->commit().ok());
        file = db->path();
    }
};

// Run `plan` as a restricted reader; the counts of msgpack_extract calls.
Counts run(const std::filesystem::path& file, ReadPlan plan) {
    RawDb db(file, SQLITE_OPEN_READONLY);
    Counts counts;
    // Deterministic, as the store registers it: an index on a payload field is usable then.
    REQUIRE(sqlite3_create_function_v2(db.get(), "msgpack_extract", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC, &counts,
                                       counting_extract, nullptr, nullptr, nullptr) == SQLITE_OK);
    REQUIRE(sqlite3_create_function_v2(db.get(), "eventd_visible", 3, SQLITE_UTF8, nullptr, visible, nullptr, nullptr,
                                       nullptr) == SQLITE_OK);
    for (const char* f : {"eventd_num_sum", "eventd_num_min", "eventd_num_max"}) {
        // Aggregates are not under test: count(*) and GROUP shapes only need them to exist.
        sqlite3_create_function_v2(
            db.get(), f, 1, SQLITE_UTF8, nullptr, nullptr, [](sqlite3_context*, int, sqlite3_value**) {},
            [](sqlite3_context*) {}, nullptr);
    }
    plan.visible_only = true;
    const auto sql = eventd::store::read_sql(plan);
    // An index on the predicate's field would be searched over hidden rows' entries without a
    // single call of the function: the plan must not use it.
    std::string plan_text;
    for (const auto& row : db.rows("EXPLAIN QUERY PLAN " + sql.sql)) plan_text += row.back() + "\n";
    CHECK(plan_text.find("idx_events_payload_pin") == std::string::npos);
    sqlite3_stmt* stmt = nullptr;
    INFO(sql.sql << ": " << sqlite3_errmsg(db.get()));
    REQUIRE(sqlite3_prepare_v2(db.get(), sql.sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK);
    std::vector<SqlParam> params = sql.params;
    if (plan.shape == ReadPlan::Shape::live) params[1] = int64_t{1} << 40;  // id <= everything
    eventd::store::bind_params(stmt, params);
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {}
    sqlite3_finalize(stmt);
    REQUIRE(rc == SQLITE_DONE);
    return counts;
}

Predicate pin(ReadOp op, int64_t value) {
    Predicate p;
    p.field = ReadField::payload("$.pin");
    p.op = op;
    p.values = {SqlParam{value}};
    return p;
}

}  // namespace

TEST_CASE("a restricted reader's predicates never run on a hidden row, in any shape, index or not", "[store][access]") {
    Shard shard;
    for (const bool indexed : {false, true}) {
        if (indexed) {
            RawDb db(shard.file);
            REQUIRE(eventd::store::register_msgpack_extract(db.get()).ok());
            db.exec(*eventd::store::create_index_sql(eventd::store::SecondaryIndex{"pin", true}));
        }
        for (const auto shape :
             {ReadPlan::Shape::rows, ReadPlan::Shape::live, ReadPlan::Shape::count, ReadPlan::Shape::groups}) {
            for (const ReadOp op : {ReadOp::gt, ReadOp::eq, ReadOp::le}) {
                ReadPlan plan;
                plan.shape = shape;
                plan.where = {pin(op, 1233)};
                if (shape == ReadPlan::Shape::groups)
                    plan.group_by = {ReadField::of(eventd::store::EventColumn::cpu_id)};
                // A time range is a bound: it may drive the timestamp index, over every row.
                Predicate since;
                since.field = ReadField::of(eventd::store::EventColumn::timestamp);
                since.op = ReadOp::ge;
                since.values = {SqlParam{int64_t{0}}};
                plan.bounds = {since};
                INFO("indexed " << indexed << ", shape " << static_cast<int>(shape) << ", op " << static_cast<int>(op));
                const Counts counts = run(shard.file, plan);
                CHECK(counts.extract_on_hidden == 0);
                CHECK(counts.extract_on_visible >= kVisible);  // the predicate did run: not vacuous
            }
        }
    }
}

TEST_CASE("an unrestricted reader's predicates run on every row (the counter sees hidden rows)", "[store][access]") {
    // The same harness without visible_only: proves it can see a predicate run on hidden rows.
    Shard shard;
    RawDb db(shard.file, SQLITE_OPEN_READONLY);
    Counts counts;
    REQUIRE(sqlite3_create_function_v2(db.get(), "msgpack_extract", 2, SQLITE_UTF8, &counts, counting_extract, nullptr,
                                       nullptr, nullptr) == SQLITE_OK);
    ReadPlan plan;
    plan.shape = ReadPlan::Shape::count;
    plan.where = {pin(ReadOp::gt, 1233)};
    const auto sql = eventd::store::read_sql(plan);
    sqlite3_stmt* stmt = nullptr;
    REQUIRE(sqlite3_prepare_v2(db.get(), sql.sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK);
    eventd::store::bind_params(stmt, sql.params);
    REQUIRE(sqlite3_step(stmt) == SQLITE_ROW);
    CHECK(sqlite3_column_int64(stmt, 0) == kHidden);
    sqlite3_finalize(stmt);
    CHECK(counts.extract_on_hidden >= kHidden);
    // And with an index on the field, the unguarded plan searches it (what the guard prevents).
    RawDb writer(shard.file);
    REQUIRE(eventd::store::register_msgpack_extract(writer.get()).ok());
    writer.exec(*eventd::store::create_index_sql(eventd::store::SecondaryIndex{"pin", true}));
    std::string plan_text;
    for (const auto& row : writer.rows("EXPLAIN QUERY PLAN " + sql.sql)) plan_text += row.back();
    CHECK(plan_text.find("idx_events_payload_pin") != std::string::npos);
}
