// The `events` table's columns (PSD-008 §3.1.1), column for column: the one place their
// names, order and types are written. The CREATE TABLE, the schema check, the prepared INSERT
// and every read-side select list are generated from this table.
//
//   column                 SQL type  NOT NULL  value                          row index
//   ─────────────────────  ────────  ────────  ─────────────────────────────  ─────────
//   id                     INTEGER   (pk)      rowid: commit order per shard  0
//   boot_id                BLOB      yes       16-byte KMES boot id           1
//   timestamp              INTEGER   yes       ns since the epoch             2
//   cpu_id                 INTEGER             NULL for synthetic non-gap     3
//   sequence               INTEGER             NULL for synthetic             4
//   origin_class           INTEGER             NULL for synthetic             5
//   event_type             TEXT      yes       dotted type name               6
//   effective_token_guid   BLOB                16 bytes or NULL               7
//   true_token_guid        BLOB                16 bytes or NULL               8
//   process_guid           BLOB                16 bytes or NULL               9
//   payload                BLOB                msgpack bytes as emitted       10
//
// What proves these columns (issue 28) is beside the table, not in it: `chain_segments`
// (row_chain.hpp, schema.hpp).
//
// A read-side row (shard_snapshot.hpp, ReadPlan::Shape::rows / live) starts with every column
// in this order, so "row index" above is where a reader finds each one.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace eventd::store {

enum class EventColumn : int {
    id,
    boot_id,
    timestamp,
    cpu_id,
    sequence,
    origin_class,
    event_type,
    effective_token_guid,
    true_token_guid,
    process_guid,
    payload,
};

// How a column's values read back: GUID columns travel as GUID strings in records.
enum class ColumnKind { integer, guid, text, blob };

struct EventColumnSpec {
    EventColumn column;
    std::string_view name;
    std::string_view sql_type;
    bool not_null;
    ColumnKind kind;
};

inline constexpr std::array<EventColumnSpec, 11> kEventColumns{{
    {EventColumn::id, "id", "INTEGER", false, ColumnKind::integer},
    {EventColumn::boot_id, "boot_id", "BLOB", true, ColumnKind::guid},
    {EventColumn::timestamp, "timestamp", "INTEGER", true, ColumnKind::integer},
    {EventColumn::cpu_id, "cpu_id", "INTEGER", false, ColumnKind::integer},
    {EventColumn::sequence, "sequence", "INTEGER", false, ColumnKind::integer},
    {EventColumn::origin_class, "origin_class", "INTEGER", false, ColumnKind::integer},
    {EventColumn::event_type, "event_type", "TEXT", true, ColumnKind::text},
    {EventColumn::effective_token_guid, "effective_token_guid", "BLOB", false, ColumnKind::guid},
    {EventColumn::true_token_guid, "true_token_guid", "BLOB", false, ColumnKind::guid},
    {EventColumn::process_guid, "process_guid", "BLOB", false, ColumnKind::guid},
    {EventColumn::payload, "payload", "BLOB", false, ColumnKind::blob},
}};
inline constexpr int kEventColumnCount = static_cast<int>(kEventColumns.size());

// The header columns of a record: every column but id and payload (§13.1), in table order.
inline constexpr int kFirstHeaderColumn = static_cast<int>(EventColumn::boot_id);
inline constexpr int kHeaderColumnCount = static_cast<int>(EventColumn::payload) - kFirstHeaderColumn;

constexpr int index_of(EventColumn c) { return static_cast<int>(c); }
constexpr const EventColumnSpec& spec_of(EventColumn c) { return kEventColumns[static_cast<size_t>(c)]; }
constexpr std::string_view name_of(EventColumn c) { return spec_of(c).name; }

// The column called `name`, if any (exact, lowercase).
constexpr std::optional<EventColumn> column_named(std::string_view name) {
    for (const EventColumnSpec& s : kEventColumns) {
        if (s.name == name) return s.column;
    }
    return std::nullopt;
}

static_assert(
    [] {
        for (size_t i = 0; i < kEventColumns.size(); ++i) {
            if (static_cast<size_t>(kEventColumns[i].column) != i) return false;
        }
        return true;
    }(),
    "kEventColumns must list the columns in EventColumn order");

// "id, boot_id, …, payload": the select list of a full row.
const std::string& event_select_list();

// CREATE TABLE events (…) as §3.1.1 draws it.
const std::string& create_events_sql();
// The prepared INSERT: parameters ?1… are the columns after id in table order, the id is
// ?kEventColumnCount (the writer numbers rows itself, never reusing an id: shard_db.hpp).
const std::string& insert_event_sql();

}  // namespace eventd::store
