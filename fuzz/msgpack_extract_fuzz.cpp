// msgpack_extract (store/msgpack_extract.hpp, PSD-008 §8.6.3) with arbitrary paths over
// arbitrary payloads, called directly and as the SQL functions a shard registers. The input
// is the path text, a NUL byte, then the payload. Checked besides "no crash": invalid input
// never raises an SQL error (one bad payload must not abort a query); the SQL function and
// the C++ function agree (but for a NaN, which SQLite turns into NULL); a BLOB result is a
// tagged one read_extracted_blob understands.
#include <sqlite3.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "check.hpp"
#include "msgpack/reader.hpp"
#include "store/msgpack_extract.hpp"

namespace {

namespace store = eventd::store;

struct Functions {
    sqlite3* db = nullptr;
    sqlite3_stmt* stmt = nullptr;

    Functions() {
        FUZZ_CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK);
        FUZZ_CHECK(store::register_msgpack_extract(db).ok());
        FUZZ_CHECK(sqlite3_prepare_v2(db,
                                      "SELECT msgpack_extract(?1, ?2), msgpack_array_has(msgpack_extract(?1, ?2), ?3),"
                                      " msgpack_array_has(msgpack_extract(?1, ?2), 1)",
                                      -1, &stmt, nullptr) == SQLITE_OK);
    }
    ~Functions() {
        sqlite3_finalize(stmt);
        sqlite3_close(db);
    }
};

// The SQL result as the C++ function's value.
store::ExtractValue column_value(sqlite3_stmt* stmt, int col) {
    switch (sqlite3_column_type(stmt, col)) {
        case SQLITE_INTEGER:
            return int64_t{sqlite3_column_int64(stmt, col)};
        case SQLITE_FLOAT:
            return sqlite3_column_double(stmt, col);
        case SQLITE_TEXT:
            return std::string(reinterpret_cast<const char*>(sqlite3_column_text(stmt, col)),
                               static_cast<size_t>(sqlite3_column_bytes(stmt, col)));
        case SQLITE_BLOB: {
            const auto* p = static_cast<const uint8_t*>(sqlite3_column_blob(stmt, col));
            return std::vector<uint8_t>(p, p + sqlite3_column_bytes(stmt, col));
        }
        default:
            return store::ExtractNull{};
    }
}

// `sql` (the SQL function's result) against `direct` (the C++ function's).
bool same(const store::ExtractValue& sql, const store::ExtractValue& direct) {
    const double* nan = std::get_if<double>(&direct);
    if (nan != nullptr && *nan != *nan) return std::holds_alternative<store::ExtractNull>(sql);  // SQLite: NaN → NULL
    const store::ExtractValue& a = sql;
    const store::ExtractValue& b = direct;
    if (a.index() != b.index()) return false;
    if (const double* x = std::get_if<double>(&a)) {
        const double y = std::get<double>(b);
        return std::memcmp(x, &y, sizeof y) == 0;
    }
    return a == b;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static Functions functions;
    const auto* nul = static_cast<const uint8_t*>(std::memchr(data, 0, size));
    if (nul == nullptr) return 0;
    const std::string path_text(reinterpret_cast<const char*>(data), static_cast<size_t>(nul - data));
    const uint8_t* payload = nul + 1;
    const size_t payload_size = size - path_text.size() - 1;

    const auto path = store::parse_extract_path(path_text);
    std::optional<store::ExtractValue> direct;
    if (path) {
        direct = store::msgpack_extract(payload, payload_size, *path);
        if (const auto* blob = std::get_if<std::vector<uint8_t>>(&*direct)) {
            FUZZ_CHECK(store::read_extracted_blob(*blob).has_value());
        }
        (void)store::locate_path({payload, payload_size}, *path, eventd::msgpack::kPayloadMaxDepth);
    }

    sqlite3_stmt* stmt = functions.stmt;
    sqlite3_reset(stmt);
    sqlite3_bind_blob(stmt, 1, payload_size ? payload : data, static_cast<int>(payload_size), SQLITE_STATIC);
    sqlite3_bind_text(stmt, 2, path_text.data(), static_cast<int>(path_text.size()), SQLITE_STATIC);
    sqlite3_bind_text(stmt, 3, path_text.data(), static_cast<int>(path_text.size()), SQLITE_STATIC);
    const int rc = sqlite3_step(stmt);
    if (!path) return 0;  // an invalid path may be an SQL error: it is the query's, not a payload's
    FUZZ_CHECK_MSG(rc == SQLITE_ROW, sqlite3_errmsg(functions.db));
    FUZZ_CHECK(same(column_value(stmt, 0), *direct));
    FUZZ_CHECK(sqlite3_column_type(stmt, 1) == SQLITE_INTEGER && sqlite3_column_type(stmt, 2) == SQLITE_INTEGER);
    return 0;
}
