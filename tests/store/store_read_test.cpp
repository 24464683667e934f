// The query read side: msgpack_extract (PSD-008 §8.6.3), shard discovery and read-only
// connections (§3.2.5, §8.6.4), record shaping and SELECT (§8.8).
#include <atomic>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>

#include "eventd/query/record.hpp"
#include "store/msgpack_extract.hpp"
#include "store/event_columns.hpp"
#include "store/shard_catalog.hpp"
#include "store_test_util.hpp"
#include "support/temp_dir.hpp"

using nlohmann::json;
using namespace eventd;
using store::ExtractNull;
using store::ExtractValue;
using test_support::TempDir;

namespace {

std::vector<uint8_t> pack(const json& j) { return json::to_msgpack(j); }

ExtractValue extract(const std::vector<uint8_t>& bytes, const std::string& path) {
    auto parsed = store::parse_extract_path(path);
    REQUIRE(parsed);
    return store::msgpack_extract(bytes.data(), bytes.size(), *parsed);
}

bool is_null(const ExtractValue& v) { return std::holds_alternative<ExtractNull>(v); }

// An in-memory database with msgpack_extract, for checking the SQL side.
struct MemDb {
    sqlite3* db = nullptr;
    MemDb() {
        REQUIRE(sqlite3_open(":memory:", &db) == SQLITE_OK);
        REQUIRE(store::register_msgpack_extract(db).ok());
    }
    ~MemDb() { sqlite3_close(db); }
    // msgpack_extract(?1, ?2) → (type, text of value)
    std::pair<int, std::string> run(const std::vector<uint8_t>* payload, const std::string& path) {
        sqlite3_stmt* st = nullptr;
        REQUIRE(sqlite3_prepare_v2(db, "SELECT msgpack_extract(?1, ?2), typeof(msgpack_extract(?1, ?2))", -1, &st,
                                   nullptr) == SQLITE_OK);
        if (payload) sqlite3_bind_blob(st, 1, payload->data(), static_cast<int>(payload->size()), SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, path.c_str(), -1, SQLITE_TRANSIENT);
        const int rc = sqlite3_step(st);
        INFO(sqlite3_errmsg(db));
        REQUIRE(rc == SQLITE_ROW);
        const int type = sqlite3_column_type(st, 0);
        std::string text;
        if (type == SQLITE_BLOB) {
            const auto* p = static_cast<const char*>(sqlite3_column_blob(st, 0));
            text.assign(p, p + sqlite3_column_bytes(st, 0));
        } else if (type != SQLITE_NULL) {
            text = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
        }
        sqlite3_finalize(st);
        return {type, text};
    }
};

query::FieldRef header_ref(const char* name, query::HeaderField h) { return {name, h, {}, 0}; }
query::FieldRef payload_ref(const std::string& name, std::vector<std::string> path) {
    return {name, std::nullopt, std::move(path), 0};
}

}  // namespace

TEST_CASE("a payload keyed at the top level by an array, a map or bytes has no fields for WHERE either", "[extract]") {
    // docs/query-language.md §3: such a payload comes back whole as `payload`; its string
    // keys are not fields (issue 23: WHERE must not test what no record shows).
    const std::vector<uint8_t> array_key = {0x82, 0x91, 0x01, 0x01, 0xa4, 'u', 's', 'e', 'r', 0xa1, 'a'};
    const std::vector<uint8_t> map_key = {0x82, 0xa4, 'u', 's', 'e', 'r', 0xa1, 'a', 0x81, 0xa1, 'k', 0x01, 0x02};
    const std::vector<uint8_t> bytes_key = {0x82, 0xa4, 'u', 's', 'e', 'r', 0xa1, 'a', 0xc4, 0x01, 'x', 0x03};
    for (const auto* payload : {&array_key, &map_key, &bytes_key}) CHECK(is_null(extract(*payload, "$.user")));
    // Bytes after the map: not one map, shown whole; no fields either.
    CHECK(is_null(extract({0x81, 0xa1, 'a', 0x07, 0xc0}, "$.a")));
    CHECK(std::get<int64_t>(extract({0x81, 0xa1, 'a', 0x07}, "$.a")) == 7);
    // Scalar keys have a text (records name them "1", "true"): the string keys stay fields.
    const std::vector<uint8_t> int_key = {0x82, 0x01, 0xa1, 'x', 0xa4, 'u', 's', 'e', 'r', 0xa1, 'a'};
    CHECK(extract(int_key, "$.user") == ExtractValue{std::string("a")});
    // Below the top level a map keeps its other keys (records keep it as it is).
    const std::vector<uint8_t> nested = {0x81, 0xa1, 's', 0x82, 0x91, 0x01, 0x01, 0xa1, 'n', 0x05};
    CHECK(extract(nested, "$.s.n") == ExtractValue{int64_t{5}});
}

TEST_CASE("extract path syntax", "[store-read]") {
    CHECK(store::parse_extract_path("$.a") == std::vector<std::string>{"a"});
    CHECK(store::parse_extract_path("$.a.b.c") == std::vector<std::string>{"a", "b", "c"});
    CHECK(store::parse_extract_path("$.user name") == std::vector<std::string>{"user name"});
    for (const char* bad : {"", "$", "$.", "a.b", "$..a", "$.a.", ".a"}) {
        INFO(bad);
        CHECK_FALSE(store::parse_extract_path(bad));
    }
}

TEST_CASE("extract every msgpack type", "[store-read]") {
    json payload = {{"i", -5},
                    {"u", 42},
                    {"big", 18446744073709551615ull},
                    {"f", 1.25},
                    {"s", "héllo"},
                    {"t", true},
                    {"fa", false},
                    {"n", nullptr},
                    {"m", {{"x", 1}}},
                    {"a", {1, 2}},
                    {"b", json::binary({1, 2, 3})},
                    {"e", json::binary({9, 9}, 7)}};
    const auto bytes = pack(payload);
    CHECK(std::get<int64_t>(extract(bytes, "$.i")) == -5);
    CHECK(std::get<int64_t>(extract(bytes, "$.u")) == 42);
    CHECK(std::get<double>(extract(bytes, "$.big")) == Approx(18446744073709551615.0));
    CHECK(std::get<double>(extract(bytes, "$.f")) == 1.25);
    CHECK(std::get<std::string>(extract(bytes, "$.s")) == "héllo");
    CHECK(std::get<int64_t>(extract(bytes, "$.t")) == 1);
    CHECK(std::get<int64_t>(extract(bytes, "$.fa")) == 0);
    // Bytes, arrays and maps are tagged BLOBs: the kind byte, then the data or the value's bytes.
    CHECK(std::get<std::vector<uint8_t>>(extract(bytes, "$.b")) == std::vector<uint8_t>{0x01, 1, 2, 3});
    CHECK(is_null(extract(bytes, "$.n")));
    CHECK(std::get<std::vector<uint8_t>>(extract(bytes, "$.m")) == std::vector<uint8_t>{0x03, 0x81, 0xa1, 'x', 0x01});
    CHECK(std::get<std::vector<uint8_t>>(extract(bytes, "$.a")) == std::vector<uint8_t>{0x02, 0x92, 0x01, 0x02});
    CHECK(is_null(extract(bytes, "$.e")));  // ext has no SQL meaning
    CHECK(is_null(extract(bytes, "$.missing")));

    // INT64_MAX itself stays an integer; float32 is widened.
    CHECK(std::get<int64_t>(extract(pack({{"x", INT64_MAX}}), "$.x")) == INT64_MAX);
    const std::vector<uint8_t> f32 = {0x81, 0xa1, 'x', 0xca, 0x3f, 0xc0, 0x00, 0x00};  // {x: 1.5f}
    CHECK(std::get<double>(extract(f32, "$.x")) == 1.5);
}

TEST_CASE("extract nested paths, siblings and missing keys", "[store-read]") {
    json payload = {{"aa", {{"source", {{"name", "decoy"}}}}},
                    {"list", {{{"source", 1}}, 2}},
                    {"source", {{"deep", {{"x", {{"y", 7}}}}}, {"name", "sshd"}, {"id", 3}}},
                    {"z", "last"}};
    const auto bytes = pack(payload);
    CHECK(std::get<std::string>(extract(bytes, "$.source.name")) == "sshd");
    CHECK(std::get<int64_t>(extract(bytes, "$.source.id")) == 3);
    CHECK(std::get<int64_t>(extract(bytes, "$.source.deep.x.y")) == 7);
    CHECK(std::get<std::string>(extract(bytes, "$.z")) == "last");
    CHECK(is_null(extract(bytes, "$.source.nope")));
    CHECK(is_null(extract(bytes, "$.source.name.more")));  // scalar where a map is needed
    CHECK(is_null(extract(bytes, "$.list.source")));       // arrays are not walked
    CHECK(is_null(extract(bytes, "$.name")));              // only the top-level map's keys
    CHECK(is_null(extract(bytes, "$.deep")));
    // Keys are case-sensitive; the first occurrence of a duplicated key wins.
    CHECK(is_null(extract(bytes, "$.Source.name")));
    const std::vector<uint8_t> dup = {0x82, 0xa1, 'k', 0x01, 0xa1, 'k', 0x02};
    CHECK(std::get<int64_t>(extract(dup, "$.k")) == 1);
}

TEST_CASE("extract from non-map and invalid payloads is NULL", "[store-read]") {
    CHECK(is_null(extract(pack(json::array({1, 2})), "$.a")));
    CHECK(is_null(extract(pack(5), "$.a")));
    CHECK(is_null(extract(pack("text"), "$.a")));
    CHECK(is_null(extract({}, "$.a")));
    CHECK(is_null(extract({0xc1}, "$.a")));                   // never-used byte
    CHECK(is_null(extract({0x81, 0xa1, 'a'}, "$.a")));        // truncated
    CHECK(is_null(extract({0x82, 0xa1, 'a', 0x01}, "$.b")));  // map claims 2 entries
    CHECK(is_null(extract({0x81, 0x01, 0x02}, "$.a")));       // integer key
    // Garbage after the value: a record shows such a payload whole, as bytes, so it has no
    // fields for WHERE either (issue 23; it used to find the value before the garbage).
    CHECK(is_null(extract({0x82, 0xa1, 'a', 0x07, 0xc1}, "$.a")));
    const std::string raw = "plain text, not msgpack";
    CHECK(is_null(extract(std::vector<uint8_t>(raw.begin(), raw.end()), "$.a")));
}

// From fuzz/msgpack_extract_fuzz.cpp (fuzz/corpus/msgpack_extract/regression-nan-is-null):
// the SQL function and the C++ one differ on a NaN, because SQLite turns a NaN result into NULL.
TEST_CASE("a NaN payload value extracts as NaN in C++ and as NULL in SQL", "[store-read]") {
    const std::vector<uint8_t> payload = {0x81, 0xa1, 'f', 0xca, 0xff, 0xff, 0xff, 0xff};  // {"f": float32 NaN}
    const ExtractValue direct = extract(payload, "$.f");
    REQUIRE(std::holds_alternative<double>(direct));
    CHECK(std::isnan(std::get<double>(direct)));
    MemDb mem;
    CHECK(mem.run(&payload, "$.f").first == SQLITE_NULL);
}

TEST_CASE("hostile nesting neither crashes extract nor record decoding", "[store-read]") {
    // {a: [[[[…1 000 000 levels…]]]], b: 1}: the reader recurses per level; the depth limit stops it.
    std::vector<uint8_t> deep = {0x82, 0xa1, 'a'};
    deep.insert(deep.end(), 1'000'000, 0x91);
    deep.push_back(0x01);
    deep.insert(deep.end(), {0xa1, 'b', 0x01});
    CHECK(is_null(extract(deep, "$.b")));
    json r = json::object();
    query::merge_payload(r, deep.data(), deep.size());
    CHECK(r["payload"].is_binary());

    // Realistic nesting (well under the limit) still decodes.
    json nested = 1;
    for (int i = 0; i < 50; ++i) nested = json{{"x", nested}};
    std::string path = "$";
    for (int i = 0; i < 50; ++i) path += ".x";
    CHECK(std::get<int64_t>(extract(pack({{"top", nested}}), "$.top" + path.substr(1))) == 1);
    const auto packed = pack({{"top", nested}});
    json ok = json::object();
    query::merge_payload(ok, packed.data(), packed.size());
    CHECK(ok == json({{"top", nested}}));
}

namespace {

// {a: [[…1…]], b: 1} nesting `depth` deep in all (the map is level 1, the arrays the rest).
std::vector<uint8_t> deep_sibling_payload(int depth) {
    std::vector<uint8_t> p = {0x82, 0xa1, 'a'};
    p.insert(p.end(), static_cast<size_t>(depth - 1), 0x91);
    p.push_back(0x01);
    p.insert(p.end(), {0xa1, 'b', 0x01});
    return p;
}

// {x: {x: … {x: 1}}} with `depth` maps, and the path "$.x.x…" to its 1.
std::vector<uint8_t> deep_path_payload(int depth) {
    std::vector<uint8_t> p;
    for (int i = 0; i < depth; ++i) p.insert(p.end(), {0x81, 0xa1, 'x'});
    p.push_back(0x01);
    return p;
}
std::string deep_path(int depth) {
    std::string path = "$";
    for (int i = 0; i < depth; ++i) path += ".x";
    return path;
}

constexpr int kPayloadDepth = 256;  // msgpack::kPayloadMaxDepth: MaxNestingDepth's ceiling (PSD-003 §6.1)

}  // namespace

TEST_CASE("extract reads payloads nested as deep as the shim admits, and no deeper", "[store-read]") {
    // A sibling of the path is skipped, checked to the limit.
    CHECK(std::get<int64_t>(extract(deep_sibling_payload(kPayloadDepth), "$.b")) == 1);
    CHECK(is_null(extract(deep_sibling_payload(kPayloadDepth + 1), "$.b")));
    // The path itself goes down to the limit.
    CHECK(std::get<int64_t>(extract(deep_path_payload(kPayloadDepth), deep_path(kPayloadDepth))) == 1);
    CHECK(is_null(extract(deep_path_payload(kPayloadDepth + 1), deep_path(kPayloadDepth + 1))));
    // A value found before a too-deep sibling is not read either: the payload is shown whole
    // (as bytes) by records, so it has no fields (issue 23; docs/query-language.md §3).
    std::vector<uint8_t> b_first = {0x82, 0xa1, 'b', 0x01, 0xa1, 'a'};
    b_first.insert(b_first.end(), kPayloadDepth + 1, 0x91);
    b_first.push_back(0x01);
    CHECK(is_null(extract(b_first, "$.b")));
}

TEST_CASE("record shaping merges payloads nested as deep as the shim admits; deeper ones travel as bytes",
          "[store-read]") {
    const auto at_limit = deep_sibling_payload(kPayloadDepth);
    json merged = json::object();
    query::merge_payload(merged, at_limit.data(), at_limit.size());
    CHECK(merged["b"] == 1);
    CHECK(merged["a"].is_array());
    CHECK_FALSE(merged.contains("payload"));

    const auto past_limit = deep_sibling_payload(kPayloadDepth + 1);
    json kept = json::object();
    query::merge_payload(kept, past_limit.data(), past_limit.size());
    CHECK(kept.size() == 1);
    CHECK(kept["payload"] == json::binary(past_limit));
}

TEST_CASE("msgpack_extract in SQL", "[store-read]") {
    MemDb db;
    const auto bytes = pack({{"a", {{"b", "x"}}}, {"n", 3}, {"f", 0.5}, {"bin", json::binary({0, 1})}});
    CHECK(db.run(&bytes, "$.a.b") == std::make_pair(SQLITE_TEXT, std::string("x")));
    CHECK(db.run(&bytes, "$.n") == std::make_pair(SQLITE_INTEGER, std::string("3")));
    CHECK(db.run(&bytes, "$.f").first == SQLITE_FLOAT);
    CHECK(db.run(&bytes, "$.bin") == std::make_pair(SQLITE_BLOB, std::string("\1\0\1", 3)));
    CHECK(db.run(&bytes, "$.a").first == SQLITE_BLOB);  // a map is a present value
    CHECK(db.run(&bytes, "$.nothing").first == SQLITE_NULL);
    CHECK(db.run(nullptr, "$.a").first == SQLITE_NULL);  // NULL payload
    const std::vector<uint8_t> garbage = {0xc1, 0xc1};
    CHECK(db.run(&garbage, "$.a").first == SQLITE_NULL);

    // Over many rows with one bound path (cached), and with a bad path: an error.
    REQUIRE(sqlite3_exec(db.db, "CREATE TABLE t(p BLOB)", nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_stmt* ins = nullptr;
    REQUIRE(sqlite3_prepare_v2(db.db, "INSERT INTO t VALUES (?)", -1, &ins, nullptr) == SQLITE_OK);
    for (int i = 0; i < 100; ++i) {
        const auto row = i % 10 == 0 ? std::vector<uint8_t>{0xc1} : pack({{"k", i}});
        sqlite3_bind_blob(ins, 1, row.data(), static_cast<int>(row.size()), SQLITE_TRANSIENT);
        REQUIRE(sqlite3_step(ins) == SQLITE_DONE);
        sqlite3_reset(ins);
    }
    sqlite3_finalize(ins);
    sqlite3_stmt* sum = nullptr;
    REQUIRE(sqlite3_prepare_v2(db.db, "SELECT sum(msgpack_extract(p, ?1)), count(msgpack_extract(p, ?1)) FROM t", -1,
                               &sum, nullptr) == SQLITE_OK);
    sqlite3_bind_text(sum, 1, "$.k", -1, SQLITE_STATIC);
    REQUIRE(sqlite3_step(sum) == SQLITE_ROW);
    CHECK(sqlite3_column_int64(sum, 0) == 4950 - (0 + 10 + 20 + 30 + 40 + 50 + 60 + 70 + 80 + 90));
    CHECK(sqlite3_column_int64(sum, 1) == 90);
    sqlite3_reset(sum);
    sqlite3_bind_text(sum, 1, "nope", -1, SQLITE_STATIC);
    CHECK(sqlite3_step(sum) == SQLITE_ERROR);
    sqlite3_finalize(sum);
}

TEST_CASE("shard catalog naming rules", "[store-read]") {
    TempDir dir;
    for (const char* name :
         {"shard-0000.db", "shard-0001.db", "shard-0007.db", "shard-12345.db", "shard-0001.quarantined-1700000000.db",
          "shard-0002.quarantined-1700000000-2.db", "shard-0000.db-wal", "shard-0000.db-shm", "eventd-meta.db",
          "eventd-meta.db-wal", "other.db", "shard-0003.txt", "shard-.db", "shard-01.db", "notes"}) {
        store_test::write_file(dir / name, "");
    }
    std::filesystem::create_directory(dir / "shard-0009.db");  // a directory is not a shard
    auto files = store::list_shard_files(dir.path());
    REQUIRE(files.ok());
    std::vector<std::string> names;
    for (const auto& f : *files) {
        names.push_back(f.name);
        CHECK(f.path == dir / f.name);
    }
    CHECK(names == std::vector<std::string>{"shard-0000.db", "shard-0001.db", "shard-0001.quarantined-1700000000.db",
                                            "shard-0002.quarantined-1700000000-2.db", "shard-0007.db", "shard-01.db",
                                            "shard-12345.db"});
    CHECK((*files)[0].active_index == 0u);
    CHECK((*files)[1].active_index == 1u);
    CHECK_FALSE((*files)[2].active_index);
    CHECK_FALSE((*files)[3].active_index);
    CHECK((*files)[4].active_index == 7u);
    CHECK_FALSE((*files)[5].active_index);  // not the NNNN form: read, never live
    CHECK((*files)[6].active_index == 12345u);

    auto missing = store::list_shard_files(dir / "absent");
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.error().message.find("absent") != std::string::npos);
}

TEST_CASE("read connection: read-only, extract registered, errors name the file", "[store-read]") {
    TempDir dir;
    {
        auto shard = store_test::open_shard(dir.path(), 0);
        REQUIRE(shard->begin().ok());
        for (uint64_t s = 1; s <= 2000; ++s) {
            auto row = test_support::event_row(
                {.boot = test_support::guid(1), .timestamp = 1000 + s, .cpu = 0, .sequence = s});
            row.payload = pack({{"user", s % 2 ? "alice" : "bob"}, {"n", s}});
            REQUIRE(shard->insert(row).ok());
        }
        REQUIRE(shard->commit().ok());
    }  // writer closed; the -wal may be gone

    auto conn = store::ReadConnection::open(dir / "shard-0000.db");
    INFO((conn ? std::string() : conn.error().message));
    REQUIRE(conn.ok());
    sqlite3_stmt* st = nullptr;
    REQUIRE(sqlite3_prepare_v2(conn->get(), "SELECT count(*) FROM events WHERE msgpack_extract(payload, ?1) = 'alice'",
                               -1, &st, nullptr) == SQLITE_OK);
    sqlite3_bind_text(st, 1, "$.user", -1, SQLITE_STATIC);
    REQUIRE(sqlite3_step(st) == SQLITE_ROW);
    CHECK(sqlite3_column_int(st, 0) == 1000);
    sqlite3_finalize(st);
    CHECK(sqlite3_exec(conn->get(), "DELETE FROM events", nullptr, nullptr, nullptr) != SQLITE_OK);

    SECTION("deadline and cancel interrupt a statement") {
        const char* slow = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c";
        auto run_slow = [&] {
            sqlite3_stmt* s = nullptr;
            REQUIRE(sqlite3_prepare_v2(conn->get(), slow, -1, &s, nullptr) == SQLITE_OK);
            const int rc = sqlite3_step(s);
            sqlite3_finalize(s);
            return rc;
        };
        conn->set_deadline(std::chrono::steady_clock::now() + std::chrono::milliseconds(50), nullptr);
        const auto start = std::chrono::steady_clock::now();
        CHECK(run_slow() == SQLITE_INTERRUPT);
        CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
        CHECK(conn->timed_out());
        CHECK_FALSE(conn->cancelled());

        std::atomic<bool> cancel{true};
        conn->set_deadline(std::chrono::steady_clock::now() + std::chrono::hours(1), &cancel);
        CHECK(run_slow() == SQLITE_INTERRUPT);
        CHECK_FALSE(conn->timed_out());
        CHECK(conn->cancelled());

        // A moved connection keeps its handler.
        store::ReadConnection moved = std::move(*conn);
        moved.set_deadline(std::chrono::steady_clock::now(), nullptr);
        sqlite3_stmt* s = nullptr;
        REQUIRE(sqlite3_prepare_v2(moved.get(), slow, -1, &s, nullptr) == SQLITE_OK);
        CHECK(sqlite3_step(s) == SQLITE_INTERRUPT);
        sqlite3_finalize(s);
        CHECK(moved.timed_out());
    }

    SECTION("files that are not readable shards") {
        store_test::write_file(dir / "shard-0005.db", "this is not a database at all, just text......");
        auto bad = store::ReadConnection::open(dir / "shard-0005.db");
        REQUIRE_FALSE(bad.ok());
        CHECK(bad.error().message.find("shard-0005.db") != std::string::npos);

        auto absent = store::ReadConnection::open(dir / "shard-0006.db");
        REQUIRE_FALSE(absent.ok());
        CHECK(absent.error().message.find("shard-0006.db") != std::string::npos);

        {
            store_test::RawDb other(dir / "shard-0007.db", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
            other.exec("CREATE TABLE x(a)");
        }
        auto stranger = store::ReadConnection::open(dir / "shard-0007.db");
        REQUIRE_FALSE(stranger.ok());
        CHECK(stranger.error().message.find("shard-0007.db") != std::string::npos);
        CHECK(stranger.error().message.find("not an event shard") != std::string::npos);
    }
}

namespace {

// One row in an in-memory `events` table (store's own CREATE TABLE), read back as a full row.
json record_of(const std::optional<std::vector<uint8_t>>& payload, bool synthetic = false) {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(":memory:", &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, store::create_events_sql().c_str(), nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_stmt* ins = nullptr;
    REQUIRE(sqlite3_prepare_v2(db, "INSERT INTO events VALUES (NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", -1, &ins,
                               nullptr) == SQLITE_OK);
    const auto g = [](uint8_t b) { return std::vector<uint8_t>(16, b); };
    const auto boot = g(0xab), eff = g(0x01), tru = g(0x02), proc = g(0x03);
    sqlite3_bind_blob(ins, 1, boot.data(), 16, SQLITE_TRANSIENT);
    sqlite3_bind_int64(ins, 2, 1700000000123456789);
    if (!synthetic) {
        sqlite3_bind_int(ins, 3, 2);
        sqlite3_bind_int64(ins, 4, 77);
        sqlite3_bind_int(ins, 5, 2);
        sqlite3_bind_blob(ins, 7, eff.data(), 16, SQLITE_TRANSIENT);
        sqlite3_bind_blob(ins, 8, tru.data(), 16, SQLITE_TRANSIENT);
        sqlite3_bind_blob(ins, 9, proc.data(), 16, SQLITE_TRANSIENT);
    }
    sqlite3_bind_text(ins, 6, synthetic ? "synthetic.startup" : "kacs.access", -1, SQLITE_STATIC);
    if (payload && payload->empty())
        sqlite3_bind_zeroblob(ins, 10, 0);  // a null data pointer would bind NULL
    else if (payload)
        sqlite3_bind_blob(ins, 10, payload->data(), static_cast<int>(payload->size()), SQLITE_TRANSIENT);
    REQUIRE(sqlite3_step(ins) == SQLITE_DONE);
    sqlite3_finalize(ins);
    sqlite3_stmt* sel = nullptr;
    const std::string sql = "SELECT " + store::event_select_list() + " FROM events";
    REQUIRE(sqlite3_prepare_v2(db, sql.c_str(), -1, &sel, nullptr) == SQLITE_OK);
    REQUIRE(sqlite3_step(sel) == SQLITE_ROW);
    json record = query::record_from_row(store::RowView(sel));
    sqlite3_finalize(sel);
    sqlite3_close(db);
    return record;
}

}  // namespace

TEST_CASE("full records: header, payload merge, header wins", "[store-read]") {
    const auto payload = pack({{"user", "alice"},
                               {"cpu_id", 99},
                               {"event_type", "spoof"},
                               {"timestamp", "x"},
                               {"source", {{"name", "sshd"}}},
                               {"list", {1, "two"}},
                               {"f", 2.5},
                               {"raw", json::binary({1, 2})},
                               {"ext", json::binary({3}, 5)},
                               {"nil", nullptr}});
    const json r = record_of(payload);
    CHECK(r["boot_id"] == "abababab-abab-abab-abab-abababababab");
    CHECK(r["timestamp"] == 1700000000123456789);
    CHECK(r["cpu_id"] == 2);  // header wins over the payload's cpu_id
    CHECK(r["event_type"] == "kacs.access");
    CHECK(r["sequence"] == 77);
    CHECK(r["origin_class"] == 2);
    CHECK(r["effective_token_guid"] == "01010101-0101-0101-0101-010101010101");
    CHECK(r["true_token_guid"] == "02020202-0202-0202-0202-020202020202");
    CHECK(r["process_guid"] == "03030303-0303-0303-0303-030303030303");
    CHECK(r["user"] == "alice");
    CHECK(r["source"] == json({{"name", "sshd"}}));
    CHECK(r["list"] == json({1, "two"}));
    CHECK(r["f"] == 2.5);
    REQUIRE(r["raw"].is_binary());
    CHECK_FALSE(r["raw"].get_binary().has_subtype());
    REQUIRE(r["ext"].is_binary());
    CHECK(r["ext"].get_binary().subtype() == 5);
    CHECK(r["nil"].is_null());
    CHECK_FALSE(r.contains("id"));
    CHECK(r.size() == 9 + 7);

    // Synthetic rows: NULL headers are nil, never absent; NULL payload adds nothing.
    const json s = record_of(std::nullopt, true);
    CHECK(s.size() == 9);
    CHECK(s["cpu_id"].is_null());
    CHECK(s["process_guid"].is_null());
    CHECK(s["event_type"] == "synthetic.startup");
}

TEST_CASE("full records: payloads that are not maps", "[store-read]") {
    const std::vector<uint8_t> raw = {'h', 'i', 0xc1, 0x00};
    const json r = record_of(raw);
    REQUIRE(r["payload"].is_binary());
    CHECK(r["payload"].get_binary() == json::binary_t(raw));
    CHECK(r.size() == 10);

    const auto array = pack({1, 2});
    CHECK(record_of(array)["payload"].get_binary() == json::binary_t(array));
    const std::vector<uint8_t> empty;
    CHECK(record_of(empty)["payload"].get_binary().empty());
    CHECK(record_of(pack(json::object())).size() == 9);
    const std::vector<uint8_t> trailing = {0x80, 0x00};  // a map followed by junk is not a map payload
    CHECK(record_of(trailing)["payload"].is_binary());
}

TEST_CASE("full records: keys that are not strings", "[store-read]") {
    // {1: "one", "key": "Q"}: the string key is a field; the integer key is one named "1".
    const std::vector<uint8_t> top = {0x82, 0x01, 0xa3, 'o', 'n', 'e', 0xa3, 'k', 'e', 'y', 0xa1, 'Q'};
    const json r = record_of(top);
    CHECK(r["key"] == "Q");
    CHECK(r["1"] == "one");
    CHECK_FALSE(r.contains("payload"));
    // {1: "i", "1": "s"}: a string key wins over a key whose text is the same.
    CHECK(record_of(std::vector<uint8_t>{0x82, 0x01, 0xa1, 'i', 0xa1, '1', 0xa1, 's'})["1"] == "s");
    // A key that is a container has no text: the payload travels as bytes.
    const std::vector<uint8_t> array_key = {0x81, 0x91, 0x01, 0x02};
    CHECK(record_of(array_key)["payload"].get_binary() == json::binary_t(array_key));

    // {"i": 5, "r": {1: "x", "y": {"z": 2.5f}}}: nested maps keep their keys; the record
    // carries r as its own bytes, written back with the float widened to float64 (§8.8).
    const std::vector<uint8_t> nested = {0x82, 0xa1, 'i',  0x05, 0xa1, 'r',  0x82, 0x01, 0xa1, 'x',
                                         0xa1, 'y',  0x81, 0xa1, 'z',  0xca, 0x40, 0x20, 0x00, 0x00};
    json n = record_of(nested);
    CHECK(n["i"] == 5);
    std::vector<uint8_t> wire;
    query::to_msgpack_float64(n["r"], wire);
    CHECK(wire ==
          std::vector<uint8_t>{0x82, 0x01, 0xa1, 'x', 0xa1, 'y', 0x81, 0xa1, 'z', 0xcb, 0x40, 0x04, 0, 0, 0, 0, 0, 0});
    query::apply_select(n, {payload_ref("r.y.z", {"r", "y", "z"}), payload_ref("r.nope", {"r", "nope"})});
    CHECK(n == json({{"r.y.z", 2.5}}));
}

TEST_CASE("SELECT shapes records", "[store-read]") {
    json r = record_of(pack({{"user", "alice"}, {"source", {{"name", "sshd"}, {"pid", 5}}}, {"cpu_id", 9}}));
    json full = r;
    query::apply_select(r, {});
    CHECK(r == full);

    query::apply_select(r, {header_ref("cpu_id", query::HeaderField::cpu_id), payload_ref("user", {"user"}),
                            payload_ref("source.name", {"source", "name"}), payload_ref("nope", {"nope"}),
                            payload_ref("user.x", {"user", "x"}), payload_ref("source", {"source"})});
    CHECK(
        r ==
        json({{"cpu_id", 2}, {"user", "alice"}, {"source.name", "sshd"}, {"source", {{"name", "sshd"}, {"pid", 5}}}}));

    json s = record_of(std::nullopt, true);
    query::apply_select(s,
                        {header_ref("process_guid", query::HeaderField::process_guid), payload_ref("user", {"user"})});
    CHECK(s == json({{"process_guid", nullptr}}));

    // A header field removed by access filtering stays absent.
    json filtered = {{"event_type", "x"}};
    query::apply_select(filtered, {header_ref("cpu_id", query::HeaderField::cpu_id),
                                   header_ref("event_type", query::HeaderField::event_type)});
    CHECK(filtered == json({{"event_type", "x"}}));
}

TEST_CASE("value_from_column", "[store-read]") {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(":memory:", &db) == SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    REQUIRE(sqlite3_prepare_v2(db, "SELECT 5, 2.5, 'txt', NULL, zeroblob(16), x'0102', zeroblob(16)", -1, &st,
                               nullptr) == SQLITE_OK);
    REQUIRE(sqlite3_step(st) == SQLITE_ROW);
    CHECK(query::value_from_column(store::RowView(st), 0, false) == 5);
    CHECK(query::value_from_column(store::RowView(st), 1, false) == 2.5);
    CHECK(query::value_from_column(store::RowView(st), 2, false) == "txt");
    CHECK(query::value_from_column(store::RowView(st), 3, true).is_null());
    CHECK(query::value_from_column(store::RowView(st), 4, true) == "00000000-0000-0000-0000-000000000000");
    CHECK(query::value_from_column(store::RowView(st), 5, true) == json::binary({1, 2}));
    CHECK(query::value_from_column(store::RowView(st), 6, false) == json::binary(std::vector<uint8_t>(16, 0)));
    sqlite3_finalize(st);
    sqlite3_close(db);
}

TEST_CASE("wire msgpack keeps floats float64", "[store-read]") {
    // nlohmann narrows 1.5 to float32 (0xca); the wire writer must not.
    CHECK(json::to_msgpack(json(1.5))[0] == 0xca);
    std::vector<uint8_t> out;
    query::to_msgpack_float64(json(1.5), out);
    CHECK(out == std::vector<uint8_t>{0xcb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0});

    // Everything else encodes exactly like nlohmann (same smallest forms), so round-trips.
    json value = {
        {"records", json::array({{{"i", -1},
                                  {"j", -33},
                                  {"k", -200},
                                  {"l", -40000},
                                  {"m", -3000000000LL},
                                  {"u", 200},
                                  {"v", 70000},
                                  {"w", 5000000000ULL},
                                  {"s", std::string(40, 'x')},
                                  {"t", std::string(300, 'y')},
                                  {"n", nullptr},
                                  {"b", true},
                                  {"bin", json::binary({1, 2, 3})},
                                  {"e1", json::binary({1}, 1)},
                                  {"e3", json::binary({1, 2, 3}, 255)},
                                  {"arr", json::array({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17})},
                                  {"f", 0.1},
                                  {"nan", NAN}}})},
        {"status", "ok"}};
    out.clear();
    query::to_msgpack_float64(value, out);
    json back = json::from_msgpack(out);
    CHECK(std::isnan(back["records"][0]["nan"].get<double>()));
    back["records"][0].erase("nan");
    value["records"][0].erase("nan");
    CHECK(back == value);
    CHECK(back["records"][0]["e3"].get_binary().subtype() == 255);
    std::vector<uint8_t> without_floats;
    value["records"][0].erase("f");
    query::to_msgpack_float64(value, without_floats);
    CHECK(without_floats == json::to_msgpack(value));
}
