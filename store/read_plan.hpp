// What a read asks of one shard (PSD-008 §8.6.3): the checked form of a query that
// eventd/query's planner produces and store/ turns into SQL (read_sql.cpp). Query code never
// writes SQL; this is the whole vocabulary it has.
//
// Row layouts, by shape (what a RowCursor's RowView holds):
//
//   rows, live   0..10  every events column in event_columns.hpp order (id first)
//                11..   one column per sort key on a payload field, in sort-key order
//                       (sort_key_column() says where each sort key's value is)
//   count        0      count(*)
//   groups       0..g-1 the group_by values, g = group_by.size()
//                g      count(*)
//                g+1    the partial of `partial` (sql_functions.hpp), when not none
//
// Order of rows: `rows` by the sort keys, then boot_id, cpu_id, sequence, id (the documented
// tie-break, §8.2.6); `live` by id, at most kLiveBatchRows per run, bounded by the id range the
// cursor is given; `groups` and `count` unordered.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "event_columns.hpp"

namespace eventd::store {

struct SqlBlob {
    std::vector<uint8_t> bytes;
    bool operator==(const SqlBlob&) const = default;
};
// One value a predicate compares with; always bound, never spliced into SQL text.
using SqlParam = std::variant<int64_t, double, std::string, SqlBlob>;

// A column, or a payload field read with msgpack_extract(payload, path).
struct ReadField {
    std::optional<EventColumn> column;
    std::string payload_path;  // "$.a.b" when !column

    static ReadField of(EventColumn c) { return ReadField{c, {}}; }
    static ReadField payload(std::string path) { return ReadField{std::nullopt, std::move(path)}; }
    bool is_payload() const { return !column; }
};

enum class ReadOp {
    eq,
    ne,
    lt,
    le,
    gt,
    ge,  // one value
    in,
    not_in,  // one or more values
    is_null,
    is_not_null,  // no value
    starts_with,
    ends_with,
    contains,  // one text value, matched literally (no wildcards)
    glob,      // one text value; `*` matches any run (§8.2.2 type pattern)
    has,       // one value; payload fields only: an array with an element equal to it
};

struct Predicate {
    enum class Kind { compare, all_of, any_of };
    Kind kind = Kind::compare;

    // compare
    ReadField field;
    ReadOp op = ReadOp::eq;
    std::vector<SqlParam> values;
    bool nocase = false;  // eq/ne/in/not_in on text: ASCII case-insensitive (SQLite NOCASE)

    // all_of / any_of (empty: true / false)
    std::vector<Predicate> children;
};

struct ReadSortKey {
    ReadField field;
    bool descending = false;
    bool nocase = false;  // text can occur: order it as NOCASE
};

// The partial aggregate a `groups` read computes per group (merged across shards by the caller).
enum class Partial { none, sum, min, max };

inline constexpr int kLiveBatchRows = 1000;

struct ReadPlan {
    enum class Shape { rows, live, count, groups };
    Shape shape = Shape::rows;

    // Every predicate of `bounds` and of `where` must hold; the two differ in when they run.
    //
    // `bounds`: ranges on the id and timestamp columns (SINCE/UNTIL, a cursor's position) that
    // may run on every row and drive an index. A restricted caller's scan therefore still
    // passes over the hidden rows inside its range: their number is what remains observable
    // (docs/ACCESS-CONTROL.md, "What a query's time can tell").
    std::vector<Predicate> bounds;
    // The caller's own filters (type pattern, WHERE). With visible_only they are evaluated only
    // on rows the caller may see — never on a hidden row, and never through an index whose
    // entries include hidden rows (issue 23: no predicate of the caller may make query time
    // depend on hidden values; PostgreSQL tests row-level security before user predicates).
    std::vector<Predicate> where;
    bool visible_only = false;  // the reader's type filter (ReadOptions::visible) decides first

    // rows
    std::vector<ReadSortKey> sort;
    std::optional<int64_t> limit;

    // groups
    std::vector<ReadField> group_by;
    Partial partial = Partial::none;
    ReadField partial_field;
};

// Where a `rows`/`live` row holds the value of sort key `i` of `plan`.
int sort_key_column(const ReadPlan& plan, size_t i);

}  // namespace eventd::store
