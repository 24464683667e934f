// msgpack_extract (PSD-008 §8.6.3): a SAX walk over the payload that stops as soon as the
// value at the path is found or known to be absent. Siblings of the path are walked (the
// SAX reader has no skip), but nothing is kept of them: no tree is built.
#include "msgpack_extract.hpp"

#include <cerrno>
#include <cstring>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>

namespace eventd::store {

namespace {

using json = nlohmann::json;

// nlohmann's reader recurses once per nesting level: a hostile payload of a million nested
// arrays would overflow the query thread's stack. Deeper than this → NULL. (record.cpp
// applies the same limit when decoding whole payloads.)
constexpr size_t kMaxDepth = 100;

// Walks one msgpack value, looking for path[0].path[1]… through nested maps.
// Every handler returns false to stop the parse once the answer is known.
class ExtractHandler {
public:
    explicit ExtractHandler(const std::vector<std::string>& path) : path_(path) {}

    ExtractValue result;

    bool null() { return scalar(ExtractNull{}); }
    bool boolean(bool v) { return scalar(int64_t{v ? 1 : 0}); }
    bool number_integer(json::number_integer_t v) { return scalar(int64_t{v}); }
    bool number_unsigned(json::number_unsigned_t v) {
        // SQLite integers are signed 64-bit: larger values become REAL (decided semantics).
        if (v <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return scalar(static_cast<int64_t>(v));
        return scalar(static_cast<double>(v));
    }
    bool number_float(json::number_float_t v, const json::string_t&) { return scalar(double{v}); }
    bool string(json::string_t& v) { return scalar(std::move(v)); }
    bool binary(json::binary_t& v) {
        // bin → BLOB; ext (a binary with a subtype) has no SQL meaning → NULL.
        if (v.has_subtype()) return scalar(ExtractNull{});
        return scalar(std::vector<uint8_t>(v.begin(), v.end()));
    }

    bool start_object(std::size_t) {
        if (!started_) {  // the payload itself: the map the first path component lives in
            started_ = true;
            depth_ = 1;
            return true;
        }
        if (next_is_path_) {
            next_is_path_ = false;
            ++matched_;
            if (matched_ == path_.size()) return stop();  // the path names a map → NULL
        }
        if (++depth_ > kMaxDepth) return stop();
        return true;
    }
    bool end_object() {
        --depth_;
        // The map that should hold path_[matched_] ended without it: missing key.
        if (depth_ == matched_) return stop();
        return true;
    }
    bool start_array(std::size_t) {
        if (!started_ || next_is_path_) return stop();  // payload not a map, or path hits an array
        if (++depth_ > kMaxDepth) return stop();
        return true;
    }
    bool end_array() {
        --depth_;
        return true;
    }
    bool key(json::string_t& k) {
        // Keys at depth matched_+1 are the keys of the map on the path (deeper ones belong
        // to sibling values being walked past). First occurrence wins.
        if (depth_ == matched_ + 1 && k == path_[matched_]) next_is_path_ = true;
        return true;
    }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
        result = ExtractNull{};  // invalid msgpack → NULL, never an SQL error
        return false;
    }

private:
    template <class V>
    bool scalar(V&& v) {
        if (!started_) return stop();  // a scalar payload: not a map
        if (!next_is_path_) return true;
        // The value of a path component: the target, or a scalar where a map was needed.
        if (matched_ + 1 == path_.size()) result = std::forward<V>(v);
        return stop();
    }
    bool stop() { return false; }

    const std::vector<std::string>& path_;
    bool started_ = false;
    bool next_is_path_ = false;
    size_t depth_ = 0;    // open containers
    size_t matched_ = 0;  // path components whose map we are inside
};

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
        sqlite3_set_auxdata(ctx, 1, fresh.release(),
                            [](void* p) { delete static_cast<std::vector<std::string>*>(p); });
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
    ExtractHandler handler(path);
    try {
        // strict=false: the walk normally stops early, and trailing bytes are not our business.
        json::sax_parse(data, data + size, &handler, json::input_format_t::msgpack, false);
    } catch (const std::exception&) {
        return ExtractNull{};  // the reader throws for a few malformed inputs; still NULL
    }
    return std::move(handler.result);
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
