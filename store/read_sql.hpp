// ReadPlan → the SQL one shard runs (PSD-008 §8.6.3) and its bound parameters, in `?` order.
// The only place read-side SQL is written. Layouts and orders: read_plan.hpp.
//
//   rows    SELECT <every column>, msgpack_extract(payload, ?) AS k0, … FROM events
//           WHERE <bounds> AND <predicates>                        -- unrestricted reader
//           WHERE <bounds> AND CASE WHEN eventd_visible(event_type, effective_token_guid, true_token_guid)
//                              THEN (<predicates>) ELSE 0 END      -- restricted (read_plan.hpp)
//           ORDER BY <keys [COLLATE NOCASE] [DESC]>, boot_id, cpu_id, sequence, id [LIMIT ?]
//   live    SELECT <every column> FROM events WHERE id > ? AND id <= ? AND <predicates> …
//           ORDER BY id LIMIT 1000          -- the two id bounds are parameters 1 and 2
//   count   SELECT count(*) FROM events WHERE …
//   groups  SELECT <g0> AS g0, …, count(*) [, eventd_num_sum|min|max(v)] FROM events WHERE …
//           GROUP BY g0, …
//
// Semantics decided here because they follow from SQLite's value order (§8.1): a payload
// field is compared with `>`/`>=` only when numeric (numbers sort below text and blobs, so
// `< ''` keeps the numbers); LIKE-based text operators match only text payload values; `%`,
// `_` and `\` in a text operand are literal.
#pragma once

#include <string>
#include <vector>

#include "read_plan.hpp"

struct sqlite3_stmt;

namespace eventd::store {

struct SqlText {
    std::string sql;
    std::vector<SqlParam> params;  // for live plans, params[0..1] are the id bounds (0 here)
};

SqlText read_sql(const ReadPlan& plan);

// Bind `params` to the `?` of a statement prepared from SqlText::sql, in order.
void bind_params(sqlite3_stmt* stmt, const std::vector<SqlParam>& params);

// `\`, `%`, `_` escaped for LIKE … ESCAPE '\'.
std::string like_escape(std::string_view text);

}  // namespace eventd::store
