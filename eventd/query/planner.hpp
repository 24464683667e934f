// Query → the SQL every shard runs (PSD-008 §8.6.2–§8.6.4). One plan serves all shards.
//
// Nothing from the query text is ever spliced into SQL: header columns come from a fixed
// whitelist (ast.hpp HeaderField), payload fields become `msgpack_extract(payload, ?)` with
// the path '$.a.b' bound, every literal is a bound parameter. Type errors (a string compared
// with `>`, a non-GUID for a GUID column, …) are found here, before anything runs.
//
// Plain query (the row layout the merge reads):
//
//   SELECT boot_id, timestamp, cpu_id, sequence, origin_class, event_type,      -- 0..9
//          effective_token_guid, true_token_guid, process_guid, payload,        --   (record.hpp)
//          id,                                                                  -- 10
//          msgpack_extract(payload, ?) AS k0, …                                 -- 11.. payload sort keys
//   FROM events WHERE <type pattern> AND <SINCE/UNTIL> AND (<WHERE 1>) AND … [AND eventd_visible(event_type)]
//   ORDER BY <sort keys, COLLATE NOCASE where text can occur>, boot_id, cpu_id, sequence, id
//   [LIMIT ?]                                                                   -- SKIP + TAKE
//
// Aggregate query (pushed down, §8.6.4; merge.hpp combines the shards' partial rows):
//
//   SELECT <g0> AS g0, … , count(*) [, eventd_num_sum(v) | eventd_num_min(v) | eventd_num_max(v)]
//   FROM events WHERE … GROUP BY g0, …          -- bare COUNT: SELECT count(*) FROM events WHERE …
//
// Live feed (§8.7): the record columns and id, `WHERE id > ? AND id <= ? AND <filters>
// ORDER BY id LIMIT 1000`; the two id bounds are the first two parameters.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "eventd/access/policy.hpp"
#include "eventd/query/ast.hpp"
#include "kmes/result.hpp"

namespace eventd::query {

struct SqlBlob {
    std::vector<uint8_t> bytes;
    bool operator==(const SqlBlob&) const = default;
};
// One bound parameter, bound in order to the `?` placeholders of Plan::sql.
using SqlParam = std::variant<int64_t, double, std::string, SqlBlob>;

// Where the merge finds one user sort key in a plain row, and how SQLite ordered it.
struct SortColumn {
    int column = 0;
    bool descending = false;
    bool nocase = false;  // COLLATE NOCASE (text can occur: event_type, payload fields)
};

// Fixed columns of plain and live rows.
inline constexpr int kIdColumn = 10;
inline constexpr int kBootIdColumn = 0;
inline constexpr int kCpuIdColumn = 2;
inline constexpr int kSequenceColumn = 3;
inline constexpr int kEventTypeColumn = 5;
inline constexpr int kLiveBatchRows = 1000;

struct Plan {
    std::string sql;
    std::vector<SqlParam> params;
    bool aggregate = false;

    // Plain: the user sort keys (tie-break columns are fixed: boot_id, cpu_id, sequence, then
    // the shard file name and id at the coordinator); the per-shard row limit (SKIP + TAKE),
    // which is also the last parameter. nullopt: no TAKE, no limit.
    std::vector<SortColumn> sort;
    std::optional<uint64_t> shard_limit;

    // Aggregate: group key columns 0..group_columns-1, count(*) next, then the partial for
    // GROUP SUM/AVG/MIN/MAX (merge.hpp) — none for bare COUNT (count at column 0).
    size_t group_columns = 0;
};

// Plan the initial (or only) result of `q`. `restricted`: add the visibility predicate
// (every caller but root). Errors: EINVAL with the decided texts (no SQL in them).
kmes::Result<Plan> plan_query(const Query& q, bool restricted);

// Plan a stream's live reads: type pattern + WHERE + visibility, no SINCE/UNTIL/SORT/limits.
kmes::Result<Plan> plan_live(const Query& q, bool restricted);

// Bind `params` to `stmt` starting at parameter `first` (1-based). Returns the next index.
int bind_params(sqlite3_stmt* stmt, const std::vector<SqlParam>& params, int first = 1);

// Register `eventd_visible(event_type)` on `db`: 1 when (*slot)->visible(event_type). Called
// through the slot on every row, so the CallerAccess behind it may be swapped or reset
// between statements (policy reload) without re-registering. Not deterministic.
kmes::Status register_visibility(sqlite3* db, access::CallerAccess* const* slot);

}  // namespace eventd::query
