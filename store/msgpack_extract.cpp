// msgpack_extract (PSD-008 §8.6.3): a walk over the payload's bytes with msgpack::Reader that
// stops as soon as the value at the path is found or known to be absent. Siblings of the path
// are skipped — checked, never kept: no tree is built, no key is copied.
#include "msgpack_extract.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
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

std::vector<uint8_t> tagged(ExtractedKind kind, std::span<const uint8_t> body) {
    std::vector<uint8_t> blob;
    blob.reserve(body.size() + 1);
    blob.push_back(static_cast<uint8_t>(kind));
    blob.insert(blob.end(), body.begin(), body.end());
    return blob;
}

std::span<const uint8_t> bytes_of(std::string_view text) {
    return {reinterpret_cast<const uint8_t*>(text.data()), text.size()};
}

// The SQL value of the value `bytes` (exactly one msgpack value, already checked by the walk):
// the table in msgpack_extract.hpp.
ExtractValue sql_value(std::span<const uint8_t> bytes) {
    msgpack::Reader in(bytes, kExtractMaxDepth, msgpack::MapKeys::any);
    auto found = in.next();
    if (!found) return ExtractNull{};
    const msgpack::Item& item = found.value();
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
            return tagged(ExtractedKind::binary, bytes_of(item.bytes));
        // Arrays and maps are present values (issue 10): their whole bytes, tagged.
        case msgpack::Kind::array:
            return tagged(ExtractedKind::array, bytes);
        case msgpack::Kind::map:
            return tagged(ExtractedKind::map, bytes);
        // ext has no SQL meaning.
        case msgpack::Kind::nil:
        case msgpack::Kind::ext:
            return ExtractNull{};
    }
    return ExtractNull{};
}

// --- msgpack_array_has -------------------------------------------------------------------------

// An integer and a float are equal only when the float is exactly that integer.
bool same_number(int64_t i, double d) {
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) || d != std::trunc(d)) return false;
    return static_cast<int64_t>(d) == i;
}
bool same_number(uint64_t u, double d) {
    if (!(d >= 0 && d < 18446744073709551616.0) || d != std::trunc(d)) return false;
    return static_cast<uint64_t>(d) == u;
}

bool ascii_iequal(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
        const auto x = static_cast<unsigned char>(a[i]), y = static_cast<unsigned char>(b[i]);
        if (x != y && std::tolower(x) != std::tolower(y)) return false;
    }
    return true;
}

// One array element against the SQL value x (the equality msgpack_extract.hpp describes).
bool element_equals(const msgpack::Item& e, sqlite3_value* x) {
    switch (sqlite3_value_type(x)) {
        case SQLITE_TEXT:
            return e.kind == msgpack::Kind::string &&
                   ascii_iequal(e.bytes, std::string_view(reinterpret_cast<const char*>(sqlite3_value_text(x)),
                                                          static_cast<size_t>(sqlite3_value_bytes(x))));
        case SQLITE_INTEGER: {
            const int64_t v = sqlite3_value_int64(x);
            switch (e.kind) {
                case msgpack::Kind::boolean:  // a boolean is the integer 1/0, as msgpack_extract gives it
                    return v == (e.boolean ? 1 : 0);
                case msgpack::Kind::int_signed:
                    return e.signed_value == v;
                case msgpack::Kind::int_unsigned:
                    return v >= 0 && e.unsigned_value == static_cast<uint64_t>(v);
                case msgpack::Kind::float32:
                case msgpack::Kind::float64:
                    return same_number(v, e.float_value);
                default:
                    return false;
            }
        }
        case SQLITE_FLOAT: {
            const double v = sqlite3_value_double(x);
            switch (e.kind) {
                case msgpack::Kind::int_signed:
                    return same_number(e.signed_value, v);
                case msgpack::Kind::int_unsigned:
                    return same_number(e.unsigned_value, v);
                case msgpack::Kind::float32:
                case msgpack::Kind::float64:
                    return e.float_value == v;
                default:
                    return false;
            }
        }
        default:
            return false;
    }
}

bool array_has(std::span<const uint8_t> array, sqlite3_value* x) {
    msgpack::Reader in(array, kExtractMaxDepth, msgpack::MapKeys::any);
    auto count = in.array_header();
    if (!count) return false;
    for (uint32_t i = 0; i < count.value(); ++i) {
        const size_t start = in.pos();
        if (!in.skip(1)) return false;
        // A container element is read only as far as its header: it never equals a scalar.
        msgpack::Reader element(array.subspan(start, in.pos() - start), kExtractMaxDepth, msgpack::MapKeys::any);
        auto item = element.next();
        if (item && element_equals(item.value(), x)) return true;
    }
    return false;
}

void sql_msgpack_array_has(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
    bool has = false;
    if (argc == 2 && sqlite3_value_type(argv[0]) == SQLITE_BLOB) {
        const auto* data = static_cast<const uint8_t*>(sqlite3_value_blob(argv[0]));
        const auto blob = read_extracted_blob({data, static_cast<size_t>(sqlite3_value_bytes(argv[0]))});
        if (blob && blob->kind == ExtractedKind::array) has = array_has(blob->body, argv[1]);
    }
    sqlite3_result_int(ctx, has ? 1 : 0);
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
        // A NaN becomes NULL here: SQLite turns every NaN result into NULL, so in SQL (WHERE,
        // SORT, indexes) a NaN payload value reads as a missing one. Frozen like the rest.
        void operator()(double v) const { sqlite3_result_double(ctx, v); }
        void operator()(const std::string& v) const {
            sqlite3_result_text64(ctx, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
        }
        void operator()(const std::vector<uint8_t>& v) const {
            sqlite3_result_blob64(ctx, v.data(), v.size(), SQLITE_TRANSIENT);  // never empty: tagged
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

std::optional<ExtractedBlob> read_extracted_blob(std::span<const uint8_t> blob) {
    if (blob.empty() || blob[0] < static_cast<uint8_t>(ExtractedKind::binary) ||
        blob[0] > static_cast<uint8_t>(ExtractedKind::map))
        return std::nullopt;
    return ExtractedBlob{static_cast<ExtractedKind>(blob[0]), blob.subspan(1)};
}

namespace {

// The value of the top-level key `name` of a whole payload, in one walk of its top-level
// map (PSD-008 §8.6.3). A payload a record shows whole as the one field `payload`
// (eventd/query/record.cpp, docs/query-language.md §3) has no fields, so no path may find one
// in it either — or WHERE would test fields no record shows (issue 23): a key without a text
// (bytes, ext, an array, a map), a value that does not read within the depth limit, or bytes
// after the map. So the walk goes on to the map's end after finding `name`; the value is read
// once, in that walk, and only its span is kept.
std::optional<std::span<const uint8_t>> top_level_value(std::span<const uint8_t> data, std::string_view name,
                                                        int max_depth) {
    msgpack::Reader in(data, max_depth, msgpack::MapKeys::any);
    if (!in.next_is_map()) return std::nullopt;
    auto pairs = in.map_header();
    if (!pairs || !in.check_depth(1)) return std::nullopt;
    std::optional<std::span<const uint8_t>> found;
    for (uint32_t i = 0; i < pairs.value(); ++i) {
        bool wanted = false;
        if (in.next_is_string()) {
            auto key = in.string();
            if (!key) return std::nullopt;
            wanted = !found && key.value() == name;  // the first occurrence wins
        } else {
            auto key = in.next();  // a scalar key is consumed whole; a container only its header
            if (!key) return std::nullopt;
            switch (key->kind) {
                case msgpack::Kind::binary:
                case msgpack::Kind::ext:
                case msgpack::Kind::map:
                case msgpack::Kind::array:
                    return std::nullopt;
                default:
                    break;  // an integer, boolean, nil or float key: named by its text, not a path
            }
        }
        const size_t start = in.pos();
        if (!in.skip(1)) return std::nullopt;
        if (wanted) found = data.subspan(start, in.pos() - start);
    }
    if (!in.at_end()) return std::nullopt;
    return found;
}

}  // namespace

std::optional<std::span<const uint8_t>> locate_path(std::span<const uint8_t> data, std::span<const std::string> path,
                                                    int max_depth) {
    // Bytes after the value at the path are not looked at: the walk normally stops early.
    // Any read error (invalid msgpack, too deep) means no value.
    msgpack::Reader in(data, max_depth, msgpack::MapKeys::any);
    for (size_t level = 0; level < path.size(); ++level) {
        // The value itself, then each path component's value, must be a map (the map at
        // `level` opens depth level + 1).
        const int depth = static_cast<int>(level) + 1;
        if (!in.next_is_map()) return std::nullopt;
        auto pairs = in.map_header();
        if (!pairs || !in.check_depth(depth)) return std::nullopt;
        bool found = false;
        for (uint32_t i = 0; i < pairs.value() && !found; ++i) {
            if (in.next_is_string()) {
                auto key = in.string();
                if (!key) return std::nullopt;
                found = key.value() == path[level];  // the first occurrence wins
            } else if (!in.skip(depth)) {            // a key that is not a string names no field
                return std::nullopt;
            }
            if (!found && !in.skip(depth)) return std::nullopt;
        }
        if (!found) return std::nullopt;  // the map ended without the key
    }
    const size_t start = in.pos();
    if (!in.skip(static_cast<int>(path.size()))) return std::nullopt;
    return data.subspan(start, in.pos() - start);
}

ExtractValue msgpack_extract(const uint8_t* data, size_t size, const std::vector<std::string>& path) {
    if (!data || size == 0 || path.empty()) return ExtractNull{};
    auto value = top_level_value({data, size}, path.front(), kExtractMaxDepth);
    // Deeper components inside that value, whose maps open one level below the payload's.
    if (value && path.size() > 1)
        value = locate_path(*value, std::span<const std::string>(path).subspan(1), kExtractMaxDepth - 1);
    if (!value) return ExtractNull{};
    return sql_value(*value);
}

base::Status register_msgpack_extract(sqlite3* db) {
    int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC;
#ifdef SQLITE_INNOCUOUS
    flags |= SQLITE_INNOCUOUS;
#endif
    int rc = sqlite3_create_function_v2(db, "msgpack_extract", 2, flags, nullptr, sql_msgpack_extract, nullptr, nullptr,
                                        nullptr);
    if (rc == SQLITE_OK) {
        rc = sqlite3_create_function_v2(db, "msgpack_array_has", 2, flags, nullptr, sql_msgpack_array_has, nullptr,
                                        nullptr, nullptr);
    }
    if (rc != SQLITE_OK) {
        return base::Error{EIO, std::string("registering the payload field reader failed: ") + sqlite3_errstr(rc)};
    }
    return {};
}

}  // namespace eventd::store
