// One SQLite value held outside SQLite, and SQLite's own order of values (NULL < numbers <
// text < blob; integers and reals compared exactly; text BINARY or NOCASE), so that rows and
// groups merged from several shards at the coordinator order exactly as each shard's ORDER BY
// and GROUP BY did (PSD-008 §8.6.4).
#pragma once

#include <cstdint>
#include <string>

#include "row_view.hpp"

namespace eventd::store {

struct SqlValue {
    ValueType type = ValueType::null;
    int64_t i = 0;
    double d = 0;
    std::string bytes;  // text or blob

    static SqlValue integer(int64_t v) {
        SqlValue s;
        s.type = ValueType::integer;
        s.i = v;
        return s;
    }
    static SqlValue real(double v) {
        SqlValue s;
        s.type = ValueType::real;
        s.d = v;
        return s;
    }
    bool is_numeric() const { return type == ValueType::integer || type == ValueType::real; }
};

// Column `col` of the current row, copied.
SqlValue value_at(const RowView& row, int col);

// <0, 0, >0 as SQLite orders a and b; `nocase`: text compared with the NOCASE collation.
int compare_values(const SqlValue& a, const SqlValue& b, bool nocase);

// Two numeric values (integer or real) compared exactly, as SQLite does.
int compare_numeric(const SqlValue& a, const SqlValue& b);

}  // namespace eventd::store
