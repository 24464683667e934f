// Record shaping (PSD-008 §8.8): header columns + merged payload, SELECT, GUID text, and a
// msgpack writer that keeps floats float64.
#include "record.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

namespace eventd::query {

namespace {

using json = nlohmann::json;

// kRecordColumns, in order; the GUID columns are shown as GUID strings.
struct Column {
    const char* name;
    bool guid;
};
constexpr Column kHeaderColumns[] = {
    {"boot_id", true},          {"timestamp", false},       {"cpu_id", false},
    {"sequence", false},        {"origin_class", false},    {"event_type", false},
    {"effective_token_guid", true}, {"true_token_guid", true}, {"process_guid", true},
};
constexpr int kPayloadColumn = 9;
static_assert(std::size(kHeaderColumns) == kPayloadColumn);

// The §13.1 header names; local so record shaping does not depend on the parser's tables.
bool is_header_name(const std::string& key) {
    return std::any_of(std::begin(kHeaderColumns), std::end(kHeaderColumns),
                       [&](const Column& c) { return key == c.name; });
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Builds the json tree of a payload, like nlohmann's own from_msgpack (same reader, same
// values: bin → binary, ext → binary with subtype, float32 → double, a repeated key → the
// last one), but refusing nesting deeper than kMaxDepth: the reader recurses once per level,
// and a hostile payload of a million nested arrays must not overflow a query thread's stack.
class DepthLimitedBuilder {
public:
    static constexpr size_t kMaxDepth = 100;

    json root;
    bool failed = false;

    bool null() { return value(nullptr); }
    bool boolean(bool v) { return value(v); }
    bool number_integer(json::number_integer_t v) { return value(v); }
    bool number_unsigned(json::number_unsigned_t v) { return value(v); }
    bool number_float(json::number_float_t v, const json::string_t&) { return value(v); }
    bool string(json::string_t& v) { return value(std::move(v)); }
    bool binary(json::binary_t& v) { return value(std::move(v)); }
    bool start_object(std::size_t) { return open(json::value_t::object); }
    bool start_array(std::size_t) { return open(json::value_t::array); }
    bool key(json::string_t& k) {
        member_ = &(*stack_.back())[k];
        return true;
    }
    bool end_object() {
        stack_.pop_back();
        return true;
    }
    bool end_array() {
        stack_.pop_back();
        return true;
    }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
        failed = true;
        return false;
    }

private:
    template <class V>
    json* place(V&& v) {
        if (stack_.empty()) {
            root = json(std::forward<V>(v));
            return &root;
        }
        json& parent = *stack_.back();
        if (parent.is_array()) {
            parent.emplace_back(std::forward<V>(v));
            return &parent.back();
        }
        *member_ = json(std::forward<V>(v));
        return member_;
    }
    template <class V>
    bool value(V&& v) {
        place(std::forward<V>(v));
        return true;
    }
    bool open(json::value_t type) {
        if (stack_.size() >= kMaxDepth) {
            failed = true;
            return false;
        }
        stack_.push_back(place(type));
        return true;
    }

    std::vector<json*> stack_;
    json* member_ = nullptr;
};

// The payload as a tree; discarded when it is not exactly one valid msgpack value.
json decode_payload(const uint8_t* data, size_t size) {
    if (size == 0) return json(json::value_t::discarded);
    DepthLimitedBuilder builder;
    bool ok = false;
    try {
        ok = json::sax_parse(data, data + size, &builder, json::input_format_t::msgpack, /*strict=*/true);
    } catch (const std::exception&) {
        ok = false;
    }
    if (!ok || builder.failed) return json(json::value_t::discarded);
    return std::move(builder.root);
}

// --- msgpack writer (float64 always) ----------------------------------------------------

void put_be(std::vector<uint8_t>& out, uint64_t v, int bytes) {
    for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

void put_unsigned(std::vector<uint8_t>& out, uint64_t v) {
    if (v < 128) {
        out.push_back(static_cast<uint8_t>(v));
    } else if (v <= 0xff) {
        out.push_back(0xcc);
        put_be(out, v, 1);
    } else if (v <= 0xffff) {
        out.push_back(0xcd);
        put_be(out, v, 2);
    } else if (v <= 0xffffffffu) {
        out.push_back(0xce);
        put_be(out, v, 4);
    } else {
        out.push_back(0xcf);
        put_be(out, v, 8);
    }
}

void put_signed(std::vector<uint8_t>& out, int64_t v) {
    if (v >= 0) return put_unsigned(out, static_cast<uint64_t>(v));
    const auto u = static_cast<uint64_t>(v);
    if (v >= -32) {
        out.push_back(static_cast<uint8_t>(v));
    } else if (v >= std::numeric_limits<int8_t>::min()) {
        out.push_back(0xd0);
        put_be(out, u, 1);
    } else if (v >= std::numeric_limits<int16_t>::min()) {
        out.push_back(0xd1);
        put_be(out, u, 2);
    } else if (v >= std::numeric_limits<int32_t>::min()) {
        out.push_back(0xd2);
        put_be(out, u, 4);
    } else {
        out.push_back(0xd3);
        put_be(out, u, 8);
    }
}

void put_string(std::vector<uint8_t>& out, const std::string& s) {
    const size_t n = s.size();
    if (n <= 31) {
        out.push_back(static_cast<uint8_t>(0xa0 | n));
    } else if (n <= 0xff) {
        out.push_back(0xd9);
        put_be(out, n, 1);
    } else if (n <= 0xffff) {
        out.push_back(0xda);
        put_be(out, n, 2);
    } else {
        out.push_back(0xdb);
        put_be(out, n, 4);
    }
    out.insert(out.end(), s.begin(), s.end());
}

void put_container_header(std::vector<uint8_t>& out, size_t n, uint8_t fix, uint8_t b16, uint8_t b32) {
    if (n <= 15) {
        out.push_back(static_cast<uint8_t>(fix | n));
    } else if (n <= 0xffff) {
        out.push_back(b16);
        put_be(out, n, 2);
    } else {
        out.push_back(b32);
        put_be(out, n, 4);
    }
}

void put_binary(std::vector<uint8_t>& out, const json::binary_t& b) {
    const size_t n = b.size();
    if (b.has_subtype()) {  // ext: keep the application's type byte
        const auto type = static_cast<uint8_t>(b.subtype());
        switch (n) {
            case 1: out.push_back(0xd4); break;
            case 2: out.push_back(0xd5); break;
            case 4: out.push_back(0xd6); break;
            case 8: out.push_back(0xd7); break;
            case 16: out.push_back(0xd8); break;
            default:
                if (n <= 0xff) {
                    out.push_back(0xc7);
                    put_be(out, n, 1);
                } else if (n <= 0xffff) {
                    out.push_back(0xc8);
                    put_be(out, n, 2);
                } else {
                    out.push_back(0xc9);
                    put_be(out, n, 4);
                }
        }
        out.push_back(type);
    } else if (n <= 0xff) {
        out.push_back(0xc4);
        put_be(out, n, 1);
    } else if (n <= 0xffff) {
        out.push_back(0xc5);
        put_be(out, n, 2);
    } else {
        out.push_back(0xc6);
        put_be(out, n, 4);
    }
    out.insert(out.end(), b.begin(), b.end());
}

}  // namespace

std::string format_guid(const uint8_t* b) {
    static const char* hex = "0123456789abcdef";
    std::string s;
    s.reserve(36);
    for (int i = 0; i < 16; ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
        s += hex[b[i] >> 4];
        s += hex[b[i] & 0xf];
    }
    return s;
}

std::optional<std::array<uint8_t, 16>> parse_guid(std::string_view text) {
    if (text.size() == 38 && text.front() == '{' && text.back() == '}') text = text.substr(1, 36);
    if (text.size() != 36) return std::nullopt;
    std::array<uint8_t, 16> out{};
    size_t pos = 0;
    for (int i = 0; i < 16; ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10) {
            if (text[pos] != '-') return std::nullopt;
            ++pos;
        }
        const int hi = hex_value(text[pos]);
        const int lo = hex_value(text[pos + 1]);
        if (hi < 0 || lo < 0) return std::nullopt;
        out[static_cast<size_t>(i)] = static_cast<uint8_t>(hi << 4 | lo);
        pos += 2;
    }
    return out;
}

json value_from_column(sqlite3_stmt* stmt, int col, bool guid) {
    switch (sqlite3_column_type(stmt, col)) {
        case SQLITE_INTEGER:
            return sqlite3_column_int64(stmt, col);
        case SQLITE_FLOAT:
            return sqlite3_column_double(stmt, col);
        case SQLITE_TEXT: {
            const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, col));
            return std::string(text, static_cast<size_t>(sqlite3_column_bytes(stmt, col)));
        }
        case SQLITE_BLOB: {
            const auto* data = static_cast<const uint8_t*>(sqlite3_column_blob(stmt, col));
            const auto size = static_cast<size_t>(sqlite3_column_bytes(stmt, col));
            if (guid && size == 16) return format_guid(data);
            return json::binary(std::vector<uint8_t>(data, data + size));
        }
        default:
            return nullptr;
    }
}

void merge_payload(Record& record, const uint8_t* data, size_t size) {
    if (!data) return;  // payload NULL → nothing added
    json decoded = decode_payload(data, size);
    if (decoded.is_object()) {
        for (auto& [key, value] : decoded.items()) {
            if (is_header_name(key)) continue;  // header wins (§8.1 field resolution)
            record[key] = std::move(value);
        }
        return;
    }
    // Not a map (raw bytes, another msgpack type, nesting deeper than kMaxDepth, or a map
    // nlohmann's reader rejects — one with non-string keys): the bytes travel as they are.
    record["payload"] = json::binary(std::vector<uint8_t>(data, data + size));
}

Record record_from_row(sqlite3_stmt* stmt, int first) {
    Record record = json::object();
    for (int i = 0; i < kPayloadColumn; ++i) {
        record[kHeaderColumns[i].name] = value_from_column(stmt, first + i, kHeaderColumns[i].guid);
    }
    const int payload = first + kPayloadColumn;
    if (sqlite3_column_type(stmt, payload) != SQLITE_NULL) {
        const auto* data = static_cast<const uint8_t*>(sqlite3_column_blob(stmt, payload));
        const auto size = static_cast<size_t>(sqlite3_column_bytes(stmt, payload));
        static const uint8_t kEmpty = 0;
        merge_payload(record, data ? data : &kEmpty, size);  // a zero-length BLOB is not NULL
    }
    return record;
}

void apply_select(Record& record, const std::vector<FieldRef>& select) {
    if (select.empty()) return;
    Record out = json::object();
    for (const FieldRef& field : select) {
        if (out.contains(field.name)) continue;
        if (field.header || field.path.empty()) {
            // Header fields are always in a full record (nil when NULL); absent only when
            // access filtering removed them — then they stay absent.
            auto it = record.find(field.name);
            if (it != record.end()) out[field.name] = *it;
            continue;
        }
        const json* node = &record;
        for (const std::string& part : field.path) {
            if (!node->is_object()) {
                node = nullptr;
                break;
            }
            auto it = node->find(part);
            if (it == node->end()) {
                node = nullptr;
                break;
            }
            node = &*it;
        }
        if (node) out[field.name] = *node;
    }
    record = std::move(out);
}

void to_msgpack_float64(const json& j, std::vector<uint8_t>& out) {
    switch (j.type()) {
        case json::value_t::null:
        case json::value_t::discarded:
            out.push_back(0xc0);
            break;
        case json::value_t::boolean:
            out.push_back(j.get<bool>() ? 0xc3 : 0xc2);
            break;
        case json::value_t::number_integer:
            put_signed(out, j.get<int64_t>());
            break;
        case json::value_t::number_unsigned:
            put_unsigned(out, j.get<uint64_t>());
            break;
        case json::value_t::number_float: {
            const double d = j.get<double>();
            uint64_t bits;
            std::memcpy(&bits, &d, sizeof bits);
            out.push_back(0xcb);  // §8.8: float64, never narrowed
            put_be(out, bits, 8);
            break;
        }
        case json::value_t::string:
            put_string(out, j.get_ref<const std::string&>());
            break;
        case json::value_t::binary:
            put_binary(out, j.get_binary());
            break;
        case json::value_t::array:
            put_container_header(out, j.size(), 0x90, 0xdc, 0xdd);
            for (const auto& v : j) to_msgpack_float64(v, out);
            break;
        case json::value_t::object:
            put_container_header(out, j.size(), 0x80, 0xde, 0xdf);
            for (const auto& [k, v] : j.items()) {
                put_string(out, k);
                to_msgpack_float64(v, out);
            }
            break;
    }
}

}  // namespace eventd::query
