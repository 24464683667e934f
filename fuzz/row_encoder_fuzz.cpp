// The row encoder (eventd/query/row_encoder.hpp) over arbitrary stored payloads: a payload is
// whatever bytes an emitter chose (kernel emitters are not validated), so encoding a row must
// never crash and must always produce one msgpack map. The input:
//
//   byte 0   who reads: 0 root (the direct way), 1 a caller with a field list (the tree way),
//            2 root with a SELECT list
//   byte 1   bit 0: the payload is NULL
//   rest     the payload column's bytes
//
// Checked: the record is one well-formed msgpack map within the record depth; for root, the
// direct record means what the tree record means (row_encoder.hpp: same keys, same values),
// compared where nlohmann can decode both.
#include <sqlite3.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "check.hpp"
#include "eventd/access/policy.hpp"
#include "eventd/query_language/parser.hpp"
#include "eventd/query/record.hpp"
#include "eventd/query/row_encoder.hpp"
#include "msgpack/reader.hpp"
#include "store/row_view.hpp"

namespace {

using nlohmann::json;

// A statement whose one row has the events columns in table order (store/event_columns.hpp),
// the payload bound per input.
struct RowSource {
    sqlite3* db = nullptr;
    sqlite3_stmt* stmt = nullptr;
    std::shared_ptr<const eventd::access::Policy> fields_policy;
    std::vector<eventd::query::FieldRef> select;
    const std::vector<eventd::query::FieldRef> no_select;

    RowSource() {
        FUZZ_CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK);
        FUZZ_CHECK(sqlite3_prepare_v2(db, "SELECT 42, ?1, 1700000000123456789, 1, 4000000000, 2, 'app.login', ?2, ?3, "
                                          "NULL, ?4",
                                      -1, &stmt, nullptr) == SQLITE_OK);
        static const uint8_t boot[16] = {0xb0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0xff};
        sqlite3_bind_blob(stmt, 1, boot, 16, SQLITE_STATIC);
        sqlite3_bind_blob(stmt, 2, boot, 16, SQLITE_STATIC);
        sqlite3_bind_blob(stmt, 3, boot, 15, SQLITE_STATIC);
        auto policy = eventd::access::Policy::parse(json::parse(R"({"Events": {"*": [
            {"allow": ["everyone"], "fields": ["timestamp", "event_type", "user", "source.name", "list"]}]}})"));
        FUZZ_CHECK(policy.ok());
        fields_policy = policy.value();
        auto query = eventd::query::parse("EVENTS SELECT user, source.name, cpu_id, payload", 0);
        FUZZ_CHECK(query.ok());
        select = query->select;
    }
    ~RowSource() {
        sqlite3_finalize(stmt);
        sqlite3_close(db);
    }
};

// The record's meaning as canonical bytes (nlohmann sorts object keys); nullopt when nlohmann
// cannot decode it (a nested map with keys that are not strings).
std::optional<std::vector<uint8_t>> canonical(std::span<const uint8_t> record) {
    try {
        return json::to_msgpack(json::from_msgpack(record.begin(), record.end()));
    } catch (const json::exception&) {
        return std::nullopt;
    }
}

std::string text(const std::vector<uint8_t>& canonical) {
    return json::from_msgpack(canonical).dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static RowSource source;
    if (size < 2) return 0;
    const int mode = data[0] % 3;
    const bool null_payload = data[1] & 1;
    sqlite3_reset(source.stmt);
    if (null_payload) {
        sqlite3_bind_null(source.stmt, 4);
    } else {
        sqlite3_bind_blob(source.stmt, 4, size > 2 ? data + 2 : data, static_cast<int>(size - 2), SQLITE_STATIC);
    }
    FUZZ_CHECK(sqlite3_step(source.stmt) == SQLITE_ROW);
    const eventd::store::RowView row(source.stmt);

    eventd::access::Caller caller;  // root
    std::shared_ptr<const eventd::access::Policy> policy = eventd::access::Policy::parse(nullptr).value();
    if (mode == 1) {
        caller.uid = caller.gid = 1000;
        caller.groups = {1000};
        policy = source.fields_policy;
    }
    eventd::access::CallerAccess access(caller, policy);
    eventd::query::RowEncoder encoder(mode == 2 ? source.select : source.no_select, access);
    const std::span<const uint8_t> record = encoder.encode(row);

    eventd::msgpack::Reader in(record, eventd::msgpack::kRecordMaxDepth, eventd::msgpack::MapKeys::any);
    FUZZ_CHECK(in.next_is_map());
    FUZZ_CHECK(in.skip() && in.at_end());

    if (mode == 0) {
        const std::vector<uint8_t> direct(record.begin(), record.end());
        std::vector<uint8_t> tree;
        eventd::query::to_msgpack_float64(eventd::query::record_from_row(row), tree);
        const auto a = canonical(direct);
        const auto b = canonical(tree);
        if (a && b) FUZZ_CHECK_MSG(*a == *b, text(*a) + "\n  tree: " + text(*b));
    }
    return 0;
}
