// The parsed form of an EVENTS query (PSD-008 §8.1, §8.2, §8.6.1). The parser (parser.hpp)
// builds it; the access check (access/policy.hpp) and the planner (planner.hpp) read it.
// Clauses are collected regardless of the order they were written in; the execution order of
// §8.6.2 is the planner's business.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "store/event_columns.hpp"

namespace eventd::query {

// The event header fields (§3.1.1, §8.1 field resolution, §13.1) are the columns of the
// events table other than id and payload, named as store/event_columns.hpp names them. Every
// other field name is a payload lookup; a header name always wins over a payload key of the
// same name.
using HeaderField = store::EventColumn;

// Name as written in queries and records ("cpu_id").
inline const char* header_name(HeaderField field) { return store::name_of(field).data(); }
// The header field called `name` (case-sensitive, as §13.1); nullopt for anything else.
std::optional<HeaderField> header_field(std::string_view name);
// One of the §13.1 header names (a payload key of that name is shadowed by the header).
inline bool is_header_name(std::string_view name) { return header_field(name).has_value(); }
inline constexpr size_t kHeaderFieldCount = store::kHeaderColumnCount;
// Stored as a 16-byte BLOB, shown as a GUID string.
inline bool is_guid_column(HeaderField field) { return store::spec_of(field).kind == store::ColumnKind::guid; }

struct FieldRef {
    std::string name;                   // as written: "cpu_id", "user", "source.name"
    std::optional<HeaderField> header;  // set when `name` is a header column
    std::vector<std::string> path;      // payload path components ("source", "name"); empty for headers
    size_t position = 0;                // 1-based character position in the query text (as in parse errors)
};

struct GuidLiteral {
    std::array<uint8_t, 16> bytes{};
};

// A literal value as written. Strings stay strings: whether "550e8400-…" means a GUID is
// decided by the field it is compared with (the planner converts for GUID columns and
// reports a clear error if the text is not a GUID). Time literals in a WHERE value position
// ("1h ago", "2026-11-01") are resolved to nanoseconds by the parser (TimeLiteral), origin
// aliases (userspace, kmes, kacs, lcs; §8.2.3; and audit) to their integers.
struct TimeLiteral {
    int64_t ns = 0;
};
using Literal = std::variant<int64_t, double, std::string, bool, TimeLiteral>;

enum class CompareOp {
    eq,           // ==
    ne,           // !=
    gt,           // >
    ge,           // >=
    lt,           // <
    le,           // <=
    starts_with,  // STARTS_WITH
    ends_with,    // ENDS_WITH
    contains,     // CONTAINS
    in,           // IN (v, …)
    not_in,       // NOT_IN (v, …)
    has,          // HAS v: an array field with an element equal to v
    is_null,      // IS NULL
    is_not_null,  // IS NOT NULL
};

// The operator as written in queries ("==", "STARTS_WITH", "IS NOT NULL"), for messages.
const char* operator_text(CompareOp op);

struct Comparison {
    FieldRef field;
    CompareOp op = CompareOp::eq;
    std::vector<Literal> values;  // one for binary operators, ≥ 1 for IN/NOT_IN, none for null tests
};

// A WHERE condition tree. AND binds tighter than OR (§8.1); the parser builds the tree with
// that precedence, so the planner only needs to parenthesise every node.
struct Condition {
    enum class Kind { all_of, any_of, compare } kind = Kind::compare;
    std::vector<Condition> children;  // all_of / any_of
    Comparison comparison;            // compare
};

enum class AggregateFn { count, sum, avg, min, max };

struct Aggregation {
    enum class Kind {
        none,      // plain records
        count,     // bare COUNT → [{count: n}]
        count_by,  // COUNT BY f → [{f: v, count: n}], count descending
        top_by,    // TOP N BY f → COUNT BY limited to the N most frequent
        distinct,  // DISTINCT f → [{f: v}]
        group,     // GROUP f1[, f2…] FN [field] → [{f1, f2…, count|sum|avg|min|max}]
    } kind = Kind::none;
    std::vector<FieldRef> fields;         // count_by/top_by/distinct: one; group: one or more
    AggregateFn fn = AggregateFn::count;  // group only
    std::optional<FieldRef> fn_field;     // group SUM/AVG/MIN/MAX: the field aggregated
    uint64_t top_n = 0;                   // top_by
};

struct SortKey {
    // For plain queries a field; for aggregate queries the name of an output key (a group
    // field, or count/sum/avg/min/max).
    FieldRef field;
    bool descending = false;
};

enum class Mode {
    events,  // EVENTS …
    status,  // STATUS: the daemon's counters (eventctl status), admins only
    index,   // EVENTS INDEX field (§8.2.7): add field to the desired index set, admin_sd only
    verify,  // VERIFY "key": seal every shard, then check the store's chains (issue 28), admins only
};

struct Query {
    Mode mode = Mode::events;
    std::optional<std::string> type_pattern;  // §8.2.2, as written ("kacs.*")
    std::optional<int64_t> since_ns;          // SINCE: timestamp >= since_ns
    std::optional<int64_t> until_ns;          // UNTIL: timestamp <= until_ns
    std::vector<Condition> where;             // one per WHERE clause, ANDed (§8.1)
    std::vector<FieldRef> select;             // SELECT lists, accumulated; empty = all fields
    std::vector<SortKey> sort;                // empty = timestamp DESC for plain queries
    std::optional<uint64_t> skip;
    std::optional<uint64_t> take;
    Aggregation aggregation;
    bool stream = false;                  // STREAM anywhere (§8.7)
    std::optional<FieldRef> index_field;  // Mode::index: the field to index (a §3.3.6 candidate)
    std::optional<std::string> verify_key;  // Mode::verify: the verification key, as written
};

}  // namespace eventd::query
