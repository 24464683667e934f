// Combining what the shards return (PSD-008 §8.6.4).
//
// - AggregateMerger: per-group partials from every shard → merged groups (COUNT sums, SUM
//   sums, AVG from sum + count, MIN/MAX of partials, DISTINCT union) → aggregate records,
//   sorted (default order of the decided semantics, or an explicit SORT on output keys),
//   TOP N, SKIP/TAKE. Memory ∝ number of groups, bounded by MaxQueryGroupBytes.
// - the per-shard partial aggregates it merges are store's (store/sql_functions.hpp), and
//   values are ordered as SQLite orders them (store/sql_value.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "eventd/query_language/ast.hpp"
#include "eventd/query/planner.hpp"
#include "eventd/query/record.hpp"
#include "base/result.hpp"
#include "store/row_view.hpp"
#include "store/sql_value.hpp"

namespace eventd::query {

using store::SqlValue;

// A group key (of `field`) or an aggregate value (no field) as a record value: a GUID
// column's 16 bytes as its string, a payload value's BLOB as the bytes, array or map it holds
// (record.hpp extracted_value), other blobs as binary.
nlohmann::json to_json(const SqlValue& v, const FieldRef* field);

// Receives the merged records one at a time, in output order; an error stops finish().
using RecordEmitter = std::function<base::Status(const Record& record)>;

class AggregateMerger {
public:
    // `group_budget_bytes`: the memory the merged groups may take (MaxQueryGroupBytes, issue
    // 40); 0 leaves them unbounded.
    AggregateMerger(const Query& q, const Plan& plan, uint64_t group_budget_bytes = 0);

    // One result row of one shard's aggregate query. An error (ErrorCode::no_memory, the text
    // naming MaxQueryGroupBytes) when a new group would take the groups past the budget.
    base::Status add_row(const store::RowView& row);
    // The merged result in output order, SKIP/TAKE and SELECT applied, each record built as it
    // is emitted: the peak stays the groups and a small entry per group, never every record.
    base::Status finish(const RecordEmitter& emit) const;
    // What the groups take so far, as the budget counts it (group_cost below).
    uint64_t group_bytes() const { return group_bytes_; }
    // A group's cost: the map node and its key (values, their text and blobs), the partial,
    // and the entry finish() sorts — measured against RSS in tests/eventd_unit/merge_budget_test.cpp.
    static uint64_t group_cost(const std::vector<SqlValue>& key);

private:
    struct Partial {
        int64_t count = 0;
        __int128 int_sum = 0;
        int64_t int_count = 0;
        double real_sum = 0;
        int64_t real_count = 0;
        SqlValue extreme;  // MIN/MAX so far; NULL: none
    };
    // Groups are by exact value, as SQLite's GROUP BY (BINARY; 1 and 1.0 are one group).
    struct KeyLess {
        bool operator()(const std::vector<SqlValue>& a, const std::vector<SqlValue>& b) const;
    };

    const Query& query_;
    size_t group_columns_;
    std::map<std::vector<SqlValue>, Partial, KeyLess> groups_;
    int64_t total_count_ = 0;  // bare COUNT
    uint64_t group_budget_bytes_;
    uint64_t group_bytes_ = 0;
};

}  // namespace eventd::query
