// Combining what the shards return (PSD-008 §8.6.4).
//
// - AggregateMerger: per-group partials from every shard → merged groups (COUNT sums, SUM
//   sums, AVG from sum + count, MIN/MAX of partials, DISTINCT union) → aggregate records,
//   sorted (default order of the decided semantics, or an explicit SORT on output keys),
//   TOP N, SKIP/TAKE. Memory ∝ number of groups.
// - the per-shard partial aggregates it merges are store's (store/sql_functions.hpp), and
//   values are ordered as SQLite orders them (store/sql_value.hpp).
#pragma once

#include <cstdint>
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

class AggregateMerger {
public:
    AggregateMerger(const Query& q, const Plan& plan);

    // One result row of one shard's aggregate query.
    void add_row(const store::RowView& row);
    // The merged result in output order; SKIP/TAKE and SELECT applied.
    std::vector<Record> finish() const;

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
};

}  // namespace eventd::query
