// Combining what the shards return (PSD-008 §8.6.4).
//
// - SqlValue / compare_values: one SQLite value and SQLite's own ordering of values (NULL <
//   numbers < text < blob; integers and reals compared exactly; text BINARY or NOCASE), so the
//   coordinator's N-way merge of plain rows orders exactly as each shard's ORDER BY did.
// - AggregateMerger: per-group partials from every shard → merged groups (COUNT sums, SUM
//   sums, AVG from sum + count, MIN/MAX of partials, DISTINCT union) → aggregate records,
//   sorted (default order of the decided semantics, or an explicit SORT on output keys),
//   TOP N, SKIP/TAKE. Memory ∝ number of groups.
// - register_aggregate_functions: the per-shard partial aggregates the planner emits:
//     eventd_num_sum(v) → BLOB partial {int128 integer sum, integer count, real sum, real count}
//       (numeric values only; the integer sum is exact, so SUM stays an integer when every
//       input is one and the total fits in 64 bits, else it becomes a float)
//     eventd_num_min(v), eventd_num_max(v) → the smallest/largest numeric value, NULL if none
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "eventd/query/ast.hpp"
#include "eventd/query/planner.hpp"
#include "eventd/query/record.hpp"
#include "kmes/result.hpp"

namespace eventd::query {

struct SqlValue {
    int type = SQLITE_NULL;  // SQLITE_NULL, SQLITE_INTEGER, SQLITE_FLOAT, SQLITE_TEXT, SQLITE_BLOB
    int64_t i = 0;
    double d = 0;
    std::string bytes;  // text or blob

    static SqlValue integer(int64_t v) {
        SqlValue s;
        s.type = SQLITE_INTEGER;
        s.i = v;
        return s;
    }
    static SqlValue real(double v) {
        SqlValue s;
        s.type = SQLITE_FLOAT;
        s.d = v;
        return s;
    }
};

SqlValue column_value(sqlite3_stmt* stmt, int col);

// <0, 0, >0 as SQLite orders a and b; `nocase`: text compared with the NOCASE collation.
int compare_values(const SqlValue& a, const SqlValue& b, bool nocase);

// The value as a record value: GUID columns (`guid`) as GUID strings, other blobs as binary.
nlohmann::json to_json(const SqlValue& v, bool guid);

kmes::Status register_aggregate_functions(sqlite3* db);

class AggregateMerger {
public:
    AggregateMerger(const Query& q, const Plan& plan);

    // One result row of one shard's aggregate query.
    void add_row(sqlite3_stmt* stmt);
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
