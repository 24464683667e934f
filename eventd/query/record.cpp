// Record shaping (PSD-008 §8.8): header columns + merged payload, SELECT, and a msgpack
// writer that keeps floats float64.
#include "record.hpp"

#include "base/guid_text.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include "kmes/guid.hpp"
#include "msgpack/reader.hpp"
#include "msgpack/writer.hpp"
#include "store/event_columns.hpp"

namespace eventd::query {

namespace {

using json = nlohmann::json;

// How deep a payload may nest and still be merged into its record: every payload the shim
// admits (msgpack::kPayloadMaxDepth, PSD-003 §2.1.6–§2.1.7 and §6.1). A deeper one (only a
// kernel emitter can store one) travels as bytes, like any payload that is not a map.
constexpr int kMergeMaxDepth = msgpack::kPayloadMaxDepth;

// The payload as a tree; discarded when it is not exactly one valid msgpack value nested
// within kMergeMaxDepth. The reader checks the bytes first because nlohmann's reader recurses
// once per level without a bound: a hostile payload of a million nested arrays must not
// overflow a query thread's stack. Then nlohmann builds the tree (bin → binary, ext → binary
// with subtype, float32 → double, a repeated key → the last one).
json decode_payload(const uint8_t* data, size_t size) {
    if (size == 0) return json(json::value_t::discarded);
    const std::span<const uint8_t> bytes(data, size);
    msgpack::Reader check(bytes, kMergeMaxDepth);
    if (!check.skip() || !check.at_end()) return json(json::value_t::discarded);
    try {
        return json::from_msgpack(bytes.begin(), bytes.end(), /*strict=*/true, /*allow_exceptions=*/false);
    } catch (const std::exception&) {
        return json(
            json::value_t::discarded);  // checked bytes should not throw; a query thread must not die if they do
    }
}

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
            if (guid && data.size() == 16) return kmes::guid_text(std::span<const uint8_t, 16>(data.data(), 16));
            return json::binary(std::vector<uint8_t>(data.begin(), data.end()));
        }
        case store::ValueType::null:
            return nullptr;
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
    // Not a map (raw bytes, another msgpack type, nesting deeper than kMergeMaxDepth, or a map
    // with non-string keys, which neither reader accepts): the bytes travel as they are.
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
