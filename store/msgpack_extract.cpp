// msgpack_extract (PSD-008 §8.6.3): a walk over the payload's bytes with msgpack::Reader that
// stops as soon as the value at the path is found or known to be absent. Siblings of the path
// are skipped — checked, never kept: no tree is built, no key is copied.
#include "msgpack_extract.hpp"

#include <cerrno>
#include <cstring>
#include <limits>
#include <memory>

#include "msgpack/reader.hpp"

namespace eventd::store {

namespace {

// How deep a payload may nest and still be searched: as deep as record shaping merges a
// payload (msgpack::kPayloadMaxDepth, PSD-003 §2.1.6–§2.1.7 and §6.1), so a field a record
// shows can also be filtered on. Past it → NULL; the bound also keeps a hostile payload of a
// million nested arrays from exhausting the query thread's stack.
constexpr int kExtractMaxDepth = msgpack::kPayloadMaxDepth;

// The SQL value of the item found at the path (see the table in msgpack_extract.hpp).
ExtractValue sql_value(const msgpack::Item& item) {
    switch (item.kind) {
        case msgpack::Kind::boolean:
            return int64_t{item.boolean ? 1 : 0};
        case msgpack::Kind::int_signed:
            return item.signed_value;
        case msgpack::Kind::int_unsigned:
            // SQLite integers are signed 64-bit: larger values become REAL (decided semantics).
            if (item.unsigned_value <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
                return static_cast<int64_t>(item.unsigned_value);
            return static_cast<double>(item.unsigned_value);
        case msgpack::Kind::float32:
        case msgpack::Kind::float64:
            return item.float_value;
        case msgpack::Kind::string:
            return std::string(item.bytes);
        case msgpack::Kind::binary:
            return std::vector<uint8_t>(item.bytes.begin(), item.bytes.end());
        // ext has no SQL meaning; a map or an array at the path is not a scalar.
        case msgpack::Kind::nil:
        case msgpack::Kind::ext:
        case msgpack::Kind::map:
        case msgpack::Kind::array:
            return ExtractNull{};
    }
    return ExtractNull{};
}

void sql_msgpack_extract(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
    if (argc != 2) {
        sqlite3_result_error(ctx, "msgpack_extract takes 2 arguments", -1);
        return;
    }
    // The parsed path is cached on the (constant, bound) path argument across rows.
    auto* path = static_cast<std::vector<std::string>*>(sqlite3_get_auxdata(ctx, 1));
    std::unique_ptr<std::vector<std::string>> fresh;
    if (!path) {
        if (sqlite3_value_type(argv[1]) != SQLITE_TEXT) {
            sqlite3_result_error(ctx, "msgpack_extract: the path must be text", -1);
            return;
        }
        const auto* text = reinterpret_cast<const char*>(sqlite3_value_text(argv[1]));
        auto parsed = parse_extract_path(std::string_view(text, static_cast<size_t>(sqlite3_value_bytes(argv[1]))));
        if (!parsed) {
            // A planner bug, not a data problem: say so rather than match nothing.
            sqlite3_result_error(ctx, "msgpack_extract: invalid path", -1);
            return;
        }
        fresh = std::make_unique<std::vector<std::string>>(std::move(*parsed));
        path = fresh.get();
    }

    ExtractValue value = ExtractNull{};
    if (sqlite3_value_type(argv[0]) != SQLITE_NULL) {
        const auto* data = static_cast<const uint8_t*>(sqlite3_value_blob(argv[0]));
        const int size = sqlite3_value_bytes(argv[0]);
        if (data && size > 0) value = msgpack_extract(data, static_cast<size_t>(size), *path);
    }

    struct Visitor {
        sqlite3_context* ctx;
        void operator()(const ExtractNull&) const { sqlite3_result_null(ctx); }
        void operator()(int64_t v) const { sqlite3_result_int64(ctx, v); }
        void operator()(double v) const { sqlite3_result_double(ctx, v); }
        void operator()(const std::string& v) const {
            sqlite3_result_text64(ctx, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
        }
        void operator()(const std::vector<uint8_t>& v) const {
            sqlite3_result_blob64(ctx, v.empty() ? "" : static_cast<const void*>(v.data()), v.size(), SQLITE_TRANSIENT);
        }
    };
    std::visit(Visitor{ctx}, value);

    // Hand the parsed path to SQLite last: it may free it at once (non-constant argument).
    if (fresh) {
        sqlite3_set_auxdata(ctx, 1, fresh.release(), [](void* p) { delete static_cast<std::vector<std::string>*>(p); });
    }
}

}  // namespace

std::optional<std::vector<std::string>> parse_extract_path(std::string_view path) {
    if (path.size() < 2 || path[0] != '$' || path[1] != '.') return std::nullopt;
    std::vector<std::string> parts;
    size_t pos = 1;  // at a '.'
    while (pos < path.size()) {
        const size_t start = pos + 1;
        size_t end = path.find('.', start);
        if (end == std::string_view::npos) end = path.size();
        if (end == start) return std::nullopt;  // empty component ("$..a", "$.a.")
        parts.emplace_back(path.substr(start, end - start));
        pos = end;
    }
    return parts;
}

ExtractValue msgpack_extract(const uint8_t* data, size_t size, const std::vector<std::string>& path) {
    if (!data || size == 0 || path.empty()) return ExtractNull{};
    // Bytes after the payload's first value are not looked at: the walk normally stops early.
    // Any read error (invalid msgpack, too deep) is NULL, never an SQL error.
    msgpack::Reader in(std::span<const uint8_t>(data, size), kExtractMaxDepth);
    for (size_t level = 0; level < path.size(); ++level) {
        // The payload itself, then each path component's value, must be a map (the map at
        // `level` opens depth level + 1).
        if (!in.next_is_map()) return ExtractNull{};
        auto pairs = in.map_header();
        if (!pairs || !in.check_depth(static_cast<int>(level) + 1)) return ExtractNull{};
        bool found = false;
        for (uint32_t i = 0; i < pairs.value() && !found; ++i) {
            auto key = in.string();
            if (!key) return ExtractNull{};
            if (key.value() == path[level]) {
                found = true;  // the first occurrence wins
            } else if (!in.skip(static_cast<int>(level) + 1)) {
                return ExtractNull{};
            }
        }
        if (!found) return ExtractNull{};  // the map ended without the key
    }
    auto item = in.next();
    if (!item) return ExtractNull{};
    return sql_value(item.value());
}

kmes::Status register_msgpack_extract(sqlite3* db) {
    int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC;
#ifdef SQLITE_INNOCUOUS
    flags |= SQLITE_INNOCUOUS;
#endif
    const int rc = sqlite3_create_function_v2(db, "msgpack_extract", 2, flags, nullptr, sql_msgpack_extract, nullptr,
                                              nullptr, nullptr);
    if (rc != SQLITE_OK) {
        return kmes::Error{EIO, std::string("registering the payload field reader failed: ") + sqlite3_errstr(rc)};
    }
    return {};
}

}  // namespace eventd::store
