// Query → the plan every shard runs (PSD-008 §8.6.2–§8.6.4). One plan serves all shards.
//
// The planner checks the query's types and produces a store::ReadPlan (store/read_plan.hpp:
// predicates over columns and payload paths, sort keys, groups); store/ writes the SQL
// (store/read_sql.hpp), so nothing from the query text is ever spliced into SQL and query
// code never sees SQL. What the coordinator needs besides — where each sort key sits in a
// row, the per-shard limit, how many group columns — is here.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "eventd/access/policy.hpp"
#include "eventd/query_language/ast.hpp"
#include "base/result.hpp"
#include "store/read_plan.hpp"

namespace eventd::query {

// Where the merge finds one user sort key in a plain row, and how the shard ordered it.
struct SortColumn {
    int column = 0;
    bool descending = false;
    bool nocase = false;  // COLLATE NOCASE (text can occur: event_type, payload fields)
};

struct Plan {
    store::ReadPlan read;
    bool aggregate = false;

    // Plain: the user sort keys (tie-break columns are fixed: boot_id, cpu_id, sequence, then
    // the shard file name and id at the coordinator); the per-shard row limit (SKIP + TAKE).
    // nullopt: no TAKE, no limit.
    std::vector<SortColumn> sort;
    std::optional<uint64_t> shard_limit;

    // Aggregate: group key columns 0..group_columns-1, count(*) next, then the partial for
    // GROUP SUM/AVG/MIN/MAX (merge.hpp) — none for bare COUNT (count at column 0).
    size_t group_columns = 0;
};

// How large a query may be (§8.6.3 leaves it to the implementation). Each WHERE condition adds a
// level to the SQL expression a shard evaluates, and SQLite refuses expressions deeper than its
// SQLITE_LIMIT_EXPR_DEPTH (1000 by default): 500 conditions leave room for the type pattern,
// SINCE/UNTIL, visibility and the few levels one condition takes by itself. The other limits
// keep below SQLite's own: 2000 terms in ORDER BY/GROUP BY, 50000 bytes of LIKE pattern (a
// text match's operand doubles at worst when escaped), 32766 bound values.
// Over a limit: EINVAL "query is too complex: …" naming the limit, before any SQL exists.
inline constexpr size_t kMaxWhereConditions = 500;  // comparisons, all WHERE clauses together
inline constexpr size_t kMaxWhereValues = 32000;    // literal values, IN lists included
inline constexpr size_t kMaxMatchTextBytes = 16384; // operand of STARTS_WITH/ENDS_WITH/CONTAINS, type pattern
inline constexpr size_t kMaxSortKeys = 64;
inline constexpr size_t kMaxGroupFields = 64;

// Plan the initial (or only) result of `q`. `restricted`: add the visibility predicate
// (every caller but root). Errors: EINVAL with the decided texts (no SQL in them), including
// the size limits above.
base::Result<Plan> plan_query(const Query& q, bool restricted);

// Plan a stream's live reads: type pattern + WHERE + visibility, no SINCE/UNTIL/SORT/limits.
base::Result<Plan> plan_live(const Query& q, bool restricted);

// The exact type of a restricted caller's query (no `*` in its pattern), whose verdict is known
// before any row is read (docs/ACCESS-CONTROL.md §6.1): `all` — every row of that type is
// visible, so the type becomes a bound (read_plan.hpp) that may drive an index on event_type,
// and the scan passes over no hidden row; `none` — nothing can match, and the plan reads
// no row at all; `own_records` (`self`) — decided per row, no change. No change for an
// unrestricted plan or a glob. Not for live plans: a reload can change the verdict while a
// stream runs.
void bound_by_type_verdict(const Query& q, access::CallerAccess::Visibility visibility, store::ReadPlan& read);

}  // namespace eventd::query
