// RowEncoder (eventd/query/row_encoder.hpp): the direct encoding of a row must mean exactly what
// the tree encoding means — same keys, same values — for every payload shape, and the direct
// way must really be taken for ordinary payloads (it is the fast path PERFORMANCE §6 relies on).
// Rows come from real SQLite statements selecting bound values in the events column order
// (store/event_columns.hpp: id first).
#include <catch2/catch.hpp>

#include <sqlite3.h>

#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "eventd/access/policy.hpp"
#include "eventd/query/record.hpp"
#include "eventd/query/row_encoder.hpp"
#include "query_util.hpp"

namespace {

using eventd_unit::root_access;
using eventd_unit::packed;

using eventd::access::Caller;
using eventd::access::CallerAccess;
using eventd::access::Policy;
using eventd::query::FieldRef;
using eventd::query::RowEncoder;
using nlohmann::json;
using Bytes = std::vector<uint8_t>;

// One row: the nine header columns (fixed values, one NULL GUID) and `payload` (nullopt: NULL).
class Row {
public:
    explicit Row(std::optional<Bytes> payload, std::string event_type = "app.login") {
        REQUIRE(sqlite3_open(":memory:", &db_) == SQLITE_OK);
        REQUIRE(sqlite3_prepare_v2(db_, "SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11", -1, &stmt_, nullptr) ==
                SQLITE_OK);
        sqlite3_bind_int64(stmt_, 1, 42);  // id
        static const uint8_t boot[16] = {0xb0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0xff};
        static const uint8_t token[16] = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
                                          0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xf0, 1};
        sqlite3_bind_blob(stmt_, 2, boot, 16, SQLITE_STATIC);
        sqlite3_bind_int64(stmt_, 3, 1'700'000'000'123'456'789);
        sqlite3_bind_int64(stmt_, 4, 1);
        sqlite3_bind_int64(stmt_, 5, 4'000'000'000);
        sqlite3_bind_int64(stmt_, 6, 2);
        sqlite3_bind_text(stmt_, 7, event_type.c_str(), -1, SQLITE_TRANSIENT);
        sqlite3_bind_blob(stmt_, 8, token, 16, SQLITE_STATIC);
        sqlite3_bind_blob(stmt_, 9, token, 15, SQLITE_STATIC);  // not 16 bytes: stays binary
        sqlite3_bind_null(stmt_, 10);
        payload_ = std::move(payload);
        if (payload_ && payload_->empty()) {
            sqlite3_bind_zeroblob(stmt_, 11, 0);  // a zero-length BLOB, not NULL
        } else if (payload_) {
            sqlite3_bind_blob(stmt_, 11, payload_->data(), static_cast<int>(payload_->size()), SQLITE_STATIC);
        }
        REQUIRE(sqlite3_step(stmt_) == SQLITE_ROW);
    }
    ~Row() {
        sqlite3_finalize(stmt_);
        sqlite3_close(db_);
    }
    eventd::store::RowView view() const { return eventd::store::RowView(stmt_); }

private:
    sqlite3* db_ = nullptr;
    sqlite3_stmt* stmt_ = nullptr;
    std::optional<Bytes> payload_;
};


json decode(std::span<const uint8_t> bytes) { return json::from_msgpack(bytes.begin(), bytes.end()); }

// The reference: the tree way, as every record was encoded before the direct way existed.
json tree_record(const eventd::store::RowView& row) {
    Bytes out;
    eventd::query::to_msgpack_float64(eventd::query::record_from_row(row), out);
    return decode(out);
}

struct Encoded {
    json record;
    bool direct;
    Bytes bytes;
};

Encoded encode(const Row& row, CallerAccess& access, const std::vector<FieldRef>& select = {}) {
    RowEncoder encoder(select, access);
    const auto bytes = encoder.encode(row.view());
    return {decode(bytes), encoder.direct_count() == 1, Bytes(bytes.begin(), bytes.end())};
}


// Keys of the top-level map in wire order.
std::vector<std::string> wire_keys(const Bytes& bytes) {
    std::vector<std::string> keys;
    const auto ordered = nlohmann::ordered_json::from_msgpack(bytes.begin(), bytes.end());
    for (const auto& [k, v] : ordered.items()) keys.push_back(k);
    return keys;
}

}  // namespace

TEST_CASE("ordinary payloads take the direct way and mean what the tree means", "[row_encoder]") {
    CallerAccess root = root_access();
    // Floats: 0.1 is packed as float64 by nlohmann (7.5 would be float32, which falls back).
    const std::vector<json> payloads = {
        json{{"user", "alice"}, {"n", 5}},
        json{
            {"n", -3}, {"big", 18446744073709551615ull}, {"neg", INT64_MIN}, {"f", 0.1}, {"t", true}, {"nil", nullptr}},
        json{{"src", {{"name", "ssh"}, {"port", 22}}}, {"list", {1, "two", {{"three", 3}}}}},
        json{{"bin", json::binary({1, 2, 3})},
             {"ext", json::binary({9, 8, 7, 6}, 42)},
             {"ext2", json::binary({1, 2, 3}, -5)}},
        json{{"long", std::string(300, 'x')}, {"utf8", "héllo\n\"q\""}},
        json::object(),
        // A header name in the payload: the header wins and the key is dropped.
        json{{"cpu_id", 99}, {"event_type", "forged"}, {"user", "mallory"}},
    };
    for (const json& p : payloads) {
        INFO(p.dump());
        Row row(packed(p));
        const Encoded e = encode(row, root);
        CHECK(e.direct);
        CHECK(e.record == tree_record(row.view()));
    }
}

TEST_CASE("a NULL payload is direct: header fields only", "[row_encoder]") {
    CallerAccess root = root_access();
    Row row(std::nullopt);
    const Encoded e = encode(row, root);
    CHECK(e.direct);
    CHECK(e.record == tree_record(row.view()));
    CHECK(e.record.size() == 9);
    CHECK(e.record["boot_id"] == "b0010203-0405-0607-0809-0a0b0c0d0eff");
    CHECK(e.record["process_guid"].is_null());
    CHECK(e.record["true_token_guid"].is_binary());
}

TEST_CASE("direct records list the header fields first, then the payload keys as stored", "[row_encoder]") {
    CallerAccess root = root_access();
    // nlohmann writes object keys sorted: zeta after alpha in the stored bytes too, so build
    // the payload by hand to prove the stored order is kept.
    const Bytes payload = {0x82, 0xa4, 'z', 'e', 't', 'a', 0x01, 0xa5, 'a', 'l', 'p', 'h', 'a', 0x02};
    Row row(payload);
    const Encoded e = encode(row, root);
    REQUIRE(e.direct);
    CHECK(wire_keys(e.bytes) == std::vector<std::string>{"boot_id", "timestamp", "cpu_id", "sequence", "origin_class",
                                                         "event_type", "effective_token_guid", "true_token_guid",
                                                         "process_guid", "zeta", "alpha"});
}

TEST_CASE("payloads the direct way cannot copy exactly fall back to the tree, with the same result", "[row_encoder]") {
    CallerAccess root = root_access();
    std::vector<Bytes> payloads;
    // float32 (must be widened to float64 on the wire, PSD-008 §8.8)
    payloads.push_back({0x81, 0xa1, 'f', 0xca, 0x3f, 0xc0, 0x00, 0x00});
    // a float32 nested in an array
    payloads.push_back({0x81, 0xa1, 'a', 0x91, 0xca, 0x3f, 0xc0, 0x00, 0x00});
    // a repeated top-level key (the tree keeps the last)
    payloads.push_back({0x82, 0xa1, 'k', 0x01, 0xa1, 'k', 0x02});
    // a repeated key in a nested map
    payloads.push_back({0x81, 0xa1, 'm', 0x82, 0xa1, 'k', 0x01, 0xa1, 'k', 0x02});
    // a non-string key (the tree keeps the payload whole as bytes)
    payloads.push_back({0x81, 0x01, 0x02});
    // not a map at all, garbage, trailing bytes after the map, an empty blob
    payloads.push_back(packed(json::array({1, 2})));
    payloads.push_back({0xc1, 0x00});
    payloads.push_back({0x81, 0xa1, 'k', 0x01, 0x00});
    payloads.push_back({});
    // a truncated string
    payloads.push_back({0x81, 0xa1, 'k', 0xa5, 'a'});
    // nesting deeper than the direct way's limit (but within the tree's)
    Bytes deep = {0x81, 0xa1, 'd'};
    for (int i = 0; i < 40; ++i) deep.push_back(0x91);
    deep.push_back(0x01);
    payloads.push_back(deep);
    for (const Bytes& p : payloads) {
        INFO(json(json::binary(p)).dump());
        Row row(p);
        const Encoded e = encode(row, root);
        CHECK_FALSE(e.direct);
        CHECK(e.record == tree_record(row.view()));
    }
}

TEST_CASE("payloads nested as deep as the default MaxNestingDepth are direct; one level more takes the tree",
          "[row_encoder]") {
    // 32: the shim's default MaxNestingDepth (PSD-003 §6.1), the direct way's limit.
    constexpr int kDirectDepth = 32;
    CallerAccess root = root_access();
    // {d: [[…1…]]} nesting `depth` deep in all: the payload map is level 1.
    auto nested = [](int depth) {
        Bytes p = {0x81, 0xa1, 'd'};
        p.insert(p.end(), static_cast<size_t>(depth - 1), 0x91);
        p.push_back(0x01);
        return p;
    };
    Row at_limit(nested(kDirectDepth));
    const Encoded direct = encode(at_limit, root);
    CHECK(direct.direct);
    CHECK(direct.record == tree_record(at_limit.view()));

    Row past_limit(nested(kDirectDepth + 1));
    const Encoded tree = encode(past_limit, root);
    CHECK_FALSE(tree.direct);
    CHECK(tree.record == tree_record(past_limit.view()));
    CHECK(tree.record["d"].is_array());  // still merged: the tree way reads up to 256 levels
}

TEST_CASE("SELECT and field lists take the tree way; a grant without a field list stays direct", "[row_encoder]") {
    json security = {{"Events",
                      {{"*", json::array({{{"allow", json::array({"uid:4321"})}}})},
                       {"app.logout", json::array({{{"allow", json::array({"uid:4321"})},
                                                    {"fields", json::array({"timestamp", "user"})}}})}}}};
    auto policy = Policy::parse(security);
    REQUIRE(policy.ok());
    Caller caller;
    caller.uid = caller.gid = 4321;
    caller.groups = {4321};
    CallerAccess access(caller, *policy);

    const Bytes payload = packed(json{{"user", "bob"}, {"n", 1}});
    Row login(payload, "app.login");
    const Encoded all = encode(login, access);
    CHECK(all.direct);
    CHECK(all.record == tree_record(login.view()));

    Row logout(payload, "app.logout");
    const Encoded some = encode(logout, access);
    CHECK_FALSE(some.direct);
    CHECK(some.record == json{{"timestamp", 1'700'000'000'123'456'789}, {"user", "bob"}});

    CallerAccess root = root_access();
    FieldRef user;
    user.name = "user";
    user.path = {"user"};
    const Encoded selected = encode(login, root, {user});
    CHECK_FALSE(selected.direct);
    CHECK(selected.record == json{{"user", "bob"}});
}
