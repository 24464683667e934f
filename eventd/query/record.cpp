// Record shaping (PSD-008 §8.8): header columns + merged payload, SELECT, and a msgpack
// writer that keeps floats float64.
#include "record.hpp"

#include "base/guid_text.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <cstring>
#include <limits>

#include "kmes/guid.hpp"
#include "msgpack/reader.hpp"
#include "msgpack/writer.hpp"
#include "store/event_columns.hpp"
#include "store/msgpack_extract.hpp"

namespace eventd::query {

namespace {

using json = nlohmann::json;

// How deep a payload may nest and still be merged into its record: every payload the shim
// admits (msgpack::kPayloadMaxDepth, PSD-003 §2.1.6–§2.1.7 and §6.1). A deeper one (only a
// kernel emitter can store one) travels as bytes, like any payload that is not a map.
constexpr int kMergeMaxDepth = msgpack::kPayloadMaxDepth;

using Bytes = std::span<const uint8_t>;

// The bytes of the next value in `in` (read past it, checked); nullopt when invalid.
std::optional<Bytes> next_value(msgpack::Reader& in, Bytes all, int depth) {
    const size_t start = in.pos();
    if (!in.skip(depth)) return std::nullopt;
    return all.subspan(start, in.pos() - start);
}

// A map key that is not a string, as the text a record uses for it: integers in decimal,
// true/false/null, floats in their shortest exact form; nullopt for keys that have no short
// text (bytes, ext, containers).
std::optional<std::string> key_text(Bytes key) {
    msgpack::Reader in(key, kMergeMaxDepth, msgpack::MapKeys::any);
    auto item = in.next();
    if (!item) return std::nullopt;
    switch (item->kind) {
        case msgpack::Kind::int_signed:
            return std::to_string(item->signed_value);
        case msgpack::Kind::int_unsigned:
            return std::to_string(item->unsigned_value);
        case msgpack::Kind::boolean:
            return item->boolean ? "true" : "false";
        case msgpack::Kind::nil:
            return "null";
        case msgpack::Kind::float32:
        case msgpack::Kind::float64: {
            char text[32];
            std::snprintf(text, sizeof text, "%.17g", item->float_value);
            return text;
        }
        default:
            return std::nullopt;
    }
}

// The payload's pairs as fields of `fields` (a fresh object): every string key, then every
// scalar non-string key by its text unless a string key already has that text; the first of
// repeated keys wins (as in WHERE: store/msgpack_extract.cpp). False when the payload is not
// exactly one map within kMergeMaxDepth, or has a key without a text.
bool payload_fields(Bytes payload, Record& fields) {
    // One walk checks the bytes as it goes (each value within the depth limit, nothing after
    // the map); on any failure the caller discards what `fields` holds so far.
    msgpack::Reader in(payload, kMergeMaxDepth, msgpack::MapKeys::any);
    auto pairs = in.map_header();
    if (!pairs) return false;
    std::vector<std::pair<std::string, Bytes>> other_keys;  // merged after every string key
    for (uint32_t i = 0; i < pairs.value(); ++i) {
        if (in.next_is_string()) {
            auto key = in.string();
            if (!key) return false;
            const std::string name(key.value());
            auto value = next_value(in, payload, 1);
            if (!value) return false;
            if (!fields.contains(name)) fields[name] = tree_value(*value);
            continue;
        }
        auto key_bytes = next_value(in, payload, 1);
        auto key = key_bytes ? key_text(*key_bytes) : std::nullopt;
        auto value = next_value(in, payload, 1);
        if (!key || !value) return false;
        other_keys.emplace_back(std::move(*key), *value);
    }
    if (!in.at_end()) return false;  // trailing bytes: not one map
    for (auto& [key, value] : other_keys) {
        if (!fields.contains(key)) fields[key] = tree_value(value);
    }
    return true;
}

// Writes the msgpack value `in` is at to `out`, floats as float64 (§8.8), map keys of any kind.
void copy_widening(msgpack::Reader& in, std::vector<uint8_t>& out) {
    namespace mp = eventd::msgpack;
    auto item = in.next();
    if (!item) {
        mp::put_nil(out);  // raw values are checked before they are kept; not reached
        return;
    }
    switch (item->kind) {
        case mp::Kind::nil:
            mp::put_nil(out);
            return;
        case mp::Kind::boolean:
            mp::put_bool(out, item->boolean);
            return;
        case mp::Kind::int_signed:
            mp::put_signed(out, item->signed_value);
            return;
        case mp::Kind::int_unsigned:
            mp::put_unsigned(out, item->unsigned_value);
            return;
        case mp::Kind::float32:
        case mp::Kind::float64:
            mp::put_float64(out, item->float_value);
            return;
        case mp::Kind::string:
            mp::put_string(out, item->bytes);
            return;
        case mp::Kind::binary:
            mp::put_binary(out, Bytes(reinterpret_cast<const uint8_t*>(item->bytes.data()), item->bytes.size()));
            return;
        case mp::Kind::ext:
            mp::put_ext(out, item->ext_type,
                        Bytes(reinterpret_cast<const uint8_t*>(item->bytes.data()), item->bytes.size()));
            return;
        case mp::Kind::array:
            mp::put_array_header(out, item->count);
            for (uint32_t i = 0; i < item->count; ++i) copy_widening(in, out);
            return;
        case mp::Kind::map:
            mp::put_map_header(out, item->count);
            for (uint32_t i = 0; i < 2 * item->count; ++i) copy_widening(in, out);
            return;
    }
}

bool is_raw_msgpack(const json& j) {
    return j.is_binary() && j.get_binary().has_subtype() && j.get_binary().subtype() == kRawMsgpackSubtype;
}

Bytes raw_bytes(const json& j) { return Bytes(j.get_binary().data(), j.get_binary().size()); }

}  // namespace

json value_from_column(const store::RowView& row, int col, bool guid) {
    switch (row.type(col)) {
        case store::ValueType::integer:
            return row.integer(col);
        case store::ValueType::real:
            return row.real(col);
        case store::ValueType::text:
            return std::string(row.text(col));
        case store::ValueType::blob: {
            const auto data = row.blob(col);
            if (guid && data.size() == 16) return base::guid_text(std::span<const uint8_t, 16>(data.data(), 16));
            return json::binary(std::vector<uint8_t>(data.begin(), data.end()));
        }
        case store::ValueType::null:
            return nullptr;
    }
    return nullptr;
}

json tree_value(std::span<const uint8_t> bytes) {
    // Checked first: nlohmann's reader recurses once per level without a bound, and a hostile
    // payload of a million nested arrays must not overflow a query thread's stack.
    msgpack::Reader check(bytes, kMergeMaxDepth, msgpack::MapKeys::any);
    if (!check.skip() || !check.at_end()) return json(json::value_t::discarded);
    // nlohmann: bin → binary, ext → binary with subtype, float32 → double. A map with a key
    // that is not a string is refused (discarded): kept as its bytes instead.
    json tree = json::from_msgpack(bytes.begin(), bytes.end(), /*strict=*/true, /*allow_exceptions=*/false);
    if (!tree.is_discarded()) return tree;
    return json::binary(std::vector<uint8_t>(bytes.begin(), bytes.end()), kRawMsgpackSubtype);
}

json extracted_value(std::span<const uint8_t> blob) {
    const auto extracted = store::read_extracted_blob(blob);
    if (!extracted) return json::binary(std::vector<uint8_t>(blob.begin(), blob.end()));
    if (extracted->kind == store::ExtractedKind::binary) {
        return json::binary(std::vector<uint8_t>(extracted->body.begin(), extracted->body.end()));
    }
    return tree_value(extracted->body);
}

void merge_payload(Record& record, const uint8_t* data, size_t size) {
    if (!data) return;  // payload NULL → nothing added
    Record fields = json::object();
    if (payload_fields(Bytes(data, size), fields)) {
        for (auto& [key, value] : fields.items()) {
            if (is_header_name(key)) continue;  // header wins (§8.1 field resolution)
            record[key] = std::move(value);
        }
        return;
    }
    // Not a map (raw bytes, another msgpack type, nesting deeper than kMergeMaxDepth, a key
    // that is a container or bytes): the bytes travel as they are.
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
        for (size_t i = 0; i < field.path.size() && node; ++i) {
            if (is_raw_msgpack(*node)) {
                // A map that kept its bytes: the rest of the path is found in them.
                const std::vector<std::string> rest(field.path.begin() + static_cast<std::ptrdiff_t>(i),
                                                    field.path.end());
                if (auto found = store::locate_path(raw_bytes(*node), rest, kMergeMaxDepth)) {
                    out[field.name] = tree_value(*found);
                }
                node = nullptr;
                break;
            }
            auto it = node->is_object() ? node->find(field.path[i]) : node->end();
            node = node->is_object() && it != node->end() ? &*it : nullptr;
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
            if (is_raw_msgpack(j)) {
                msgpack::Reader in(raw_bytes(j), kMergeMaxDepth, msgpack::MapKeys::any);
                copy_widening(in, out);
                break;
            }
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
