// Records as clients receive them (PSD-008 §8.8): a flat map of the header fields (GUIDs as
// strings, boot_id included, NULL → nil) with the payload map's keys merged as top-level
// keys — a header name always wins over a payload key of the same name; a key that is not a
// string is named by its text (1 → "1") unless a string key has that text. Nested values stay
// as they are, maps with keys of any kind included. A payload that is not a msgpack map
// travels as one key `payload` holding its bytes (bin).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "eventd/query_language/ast.hpp"
#include "store/row_view.hpp"

namespace eventd::query {

using Record = nlohmann::json;  // always an object

// A msgpack value nlohmann cannot hold (a map with a key that is not a string, at any depth)
// is kept in a record as its bytes: a json binary with this subtype, written back as the
// value itself by to_msgpack_float64. Ext subtypes are 0–255, so it never meets an ext value.
inline constexpr std::uint64_t kRawMsgpackSubtype = 0x10000;

// One msgpack value as a record value: a tree, or the raw form above; discarded when the
// bytes are not exactly one valid value within the payload depth limit.
nlohmann::json tree_value(std::span<const uint8_t> bytes);
// A payload value msgpack_extract returned as a BLOB (group keys, DISTINCT values): bytes as
// binary, an array or map as the value itself (store/msgpack_extract.hpp ExtractedKind).
nlohmann::json extracted_value(std::span<const uint8_t> blob);

// The full record of a rows/live row (store/read_plan.hpp): the header columns of
// store/event_columns.hpp in table order, then the payload merged.
Record record_from_row(const store::RowView& row);

// SELECT (§8.6.2 step 12, additive): keep only the selected fields, keyed by the name as
// written ("source.name" for a nested payload path). A selected header field is always
// present (nil when NULL); a payload field the record lacks is omitted. Empty select: no-op.
void apply_select(Record& record, const std::vector<FieldRef>& select);

// One column value as a record value: INTEGER → integer, REAL → float, TEXT → string,
// BLOB → binary (or a GUID string when `guid` and it is 16 bytes), NULL → nil. For
// aggregate outputs (group keys, min/max).
nlohmann::json value_from_column(const store::RowView& row, int col, bool guid);

// The decoded payload merged into `record` per the rules above (exposed for the live feed
// and tests). `data` may be null (payload NULL → nothing added).
void merge_payload(Record& record, const uint8_t* data, size_t size);

// Msgpack encoding for the wire (§8.8: floats are float64). nlohmann's own to_msgpack writes
// a float as float32 whenever that is lossless (binary_writer.hpp write_compact_float), so
// every reply frame must be encoded with this writer instead. Appends to `out`. Integers,
// strings, arrays, maps and nil use the smallest msgpack form, like nlohmann; a binary value
// with a subtype becomes ext (fixext/ext 8/16/32), without one bin.
void to_msgpack_float64(const nlohmann::json& value, std::vector<uint8_t>& out);

}  // namespace eventd::query
