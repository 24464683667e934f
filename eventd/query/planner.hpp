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

#include "eventd/query/ast.hpp"
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

// Plan the initial (or only) result of `q`. `restricted`: add the visibility predicate
// (every caller but root). Errors: EINVAL with the decided texts (no SQL in them).
kmes::Result<Plan> plan_query(const Query& q, bool restricted);

// Plan a stream's live reads: type pattern + WHERE + visibility, no SINCE/UNTIL/SORT/limits.
kmes::Result<Plan> plan_live(const Query& q, bool restricted);

}  // namespace eventd::query
