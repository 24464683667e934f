// Record shaping (PSD-008 §8.8): header columns + merged payload, SELECT, GUID text, and a
// msgpack writer that keeps floats float64.
#include "record.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include "msgpack/writer.hpp"
#include "store/event_columns.hpp"

namespace eventd::query {

namespace {

using json = nlohmann::json;


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

}  // namespace

void format_guid(const uint8_t* b, char* out) {
    static constexpr char kHex[] = "0123456789abcdef";
    for (int i = 0; i < 16; ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10) *out++ = '-';
        *out++ = kHex[b[i] >> 4];
        *out++ = kHex[b[i] & 0xf];
    }
}

std::string format_guid(const uint8_t* b) {
    std::string s(kGuidTextLength, '\0');
    format_guid(b, s.data());
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

json value_from_column(const store::RowView& row, int col, bool guid) {
    switch (row.type(col)) {
        case store::ValueType::integer: return row.integer(col);
        case store::ValueType::real: return row.real(col);
        case store::ValueType::text: return std::string(row.text(col));
        case store::ValueType::blob: {
            const auto data = row.blob(col);
            if (guid && data.size() == 16) return format_guid(data.data());
            return json::binary(std::vector<uint8_t>(data.begin(), data.end()));
        }
        case store::ValueType::null: return nullptr;
    }
    return nullptr;
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

Record record_from_row(const store::RowView& row) {
    Record record = json::object();
    for (int i = store::kFirstHeaderColumn; i < store::kFirstHeaderColumn + store::kHeaderColumnCount; ++i) {
        const store::EventColumnSpec& column = store::kEventColumns[static_cast<size_t>(i)];
        record[std::string(column.name)] = value_from_column(row, i, column.kind == store::ColumnKind::guid);
    }
    const int payload = store::index_of(store::EventColumn::payload);
    if (row.type(payload) != store::ValueType::null) {
        const auto data = row.blob(payload);
        static const uint8_t kEmpty = 0;
        merge_payload(record, data.empty() ? &kEmpty : data.data(), data.size());  // a zero-length BLOB is not NULL
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
    namespace mp = eventd::msgpack;
    switch (j.type()) {
        case json::value_t::null:
        case json::value_t::discarded:
            mp::put_nil(out);
            break;
        case json::value_t::boolean:
            mp::put_bool(out, j.get<bool>());
            break;
        case json::value_t::number_integer:
            mp::put_signed(out, j.get<int64_t>());
            break;
        case json::value_t::number_unsigned:
            mp::put_unsigned(out, j.get<uint64_t>());
            break;
        case json::value_t::number_float:
            mp::put_float64(out, j.get<double>());
            break;
        case json::value_t::string:
            mp::put_string(out, j.get_ref<const std::string&>());
            break;
        case json::value_t::binary: {
            const json::binary_t& b = j.get_binary();
            // nlohmann keeps a msgpack ext type as the binary's subtype: ext again on the wire.
            if (b.has_subtype()) {
                mp::put_ext(out, static_cast<int8_t>(static_cast<uint8_t>(b.subtype())), b);
            } else {
                mp::put_binary(out, b);
            }
            break;
        }
        case json::value_t::array:
            mp::put_array_header(out, j.size());
            for (const auto& v : j) to_msgpack_float64(v, out);
            break;
        case json::value_t::object:
            mp::put_map_header(out, j.size());
            for (const auto& [k, v] : j.items()) {
                mp::put_string(out, k);
                to_msgpack_float64(v, out);
            }
            break;
    }
}

}  // namespace eventd::query
