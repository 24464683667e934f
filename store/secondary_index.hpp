// Secondary indexes of a shard (PSD-008 §3.3.6–§3.3.7): which fields may have one, what each
// is called, and the one SQL text that creates it. The read side (read_sql.cpp) writes a
// payload field with payload_field_sql() too, so a query's expression is the index's
// expression, character for character, and SQLite can use the index.
//
// Every comparison on a payload field and on event_type is made with COLLATE NOCASE (text
// compares ignoring ASCII case; numbers are unaffected by a collation), so these indexes are
// NOCASE too: an index serves a query only when their collations agree.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "event_columns.hpp"

namespace eventd::store {

// The index every shard has from creation (§3.1.3); never managed, never shed.
inline constexpr std::string_view kTimestampIndex = "idx_events_timestamp";
inline constexpr std::string_view kIndexPrefix = "idx_events_";

// One managed index: a header column, or a payload path ("source.name", no "$.").
struct SecondaryIndex {
    std::string field_path;
    bool is_expression = false;
    bool operator==(const SecondaryIndex&) const = default;
};

// The header columns §3.3.6 allows (timestamp is always indexed; id, sequence and payload never).
bool is_index_candidate(EventColumn column);
// A payload path an index may be built on: one or more dot-separated names of letters,
// digits and `_` (what the query lexer admits as a field). Anything else is refused, so that
// no text of a query ever reaches SQL unquoted.
bool is_valid_payload_path(std::string_view path);

// §3.3.7: idx_events_<column>, idx_events_payload_<path with dots as underscores>.
std::string index_name(const SecondaryIndex& index);
// CREATE INDEX IF NOT EXISTS … ON events(<column or payload expression> [COLLATE NOCASE],
// timestamp): searchable by the field, and newest first within one value of it.
// nullopt for a field that is not a candidate (the raw payload column never gets an index).
std::optional<std::string> create_index_sql(const SecondaryIndex& index);
std::string drop_index_sql(std::string_view name);

// msgpack_extract(payload, '$.a.b') with the path as an SQL string literal ("$.a.b" given).
std::string payload_field_sql(std::string_view dollar_path);

}  // namespace eventd::store
