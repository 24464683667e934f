// The query tables (tests/query/cases/*.test, format in cases/README.md), modelled on DuckDB's
// sqllogictest: each case is a query and its exact expected output, readable without C++.
//
//   # a comment
//   user eventd-auditor                      (later cases run as this user; `user root` resets)
//   query EVENTS app.login WHERE user == "ALICE" SELECT user SORT sequence
//   ----
//   {"user":"alice"}                         (one JSON object per expected record, in order)
//
//   error EVENTS WHERE cpu_id >
//   ----
//   parse error at position 24: expected a value, found end of query
//                                            (stderr exactly; "~ text": stderr contains text)
//
// A case ends at a blank line or the next directive. No expected lines = an empty result.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace eventd::query_it {

struct QueryCase {
    enum class Kind { query, error } kind = Kind::query;
    std::string file;                     // base name, for messages
    int line = 0;                         // line of the query
    std::string user;                     // "" = root
    std::string text;                     // the query as passed to eventctl
    std::vector<nlohmann::json> records;  // Kind::query
    std::string error;                    // Kind::error
    bool error_substring = false;         // "~ " prefix
};

// Parse one .test file; throws std::runtime_error naming file:line on a malformed table.
std::vector<QueryCase> parse_case_file(const std::string& path);
// Every *.test file in `dir`, sorted by name.
std::vector<std::string> case_files(const std::string& dir);

// Record equality: same keys, equal values; numbers compare numerically (an integer equals the
// same float) and floats within a relative 1e-9 (AVG may be computed in another order).
bool records_equal(const nlohmann::json& expected, const nlohmann::json& actual);

}  // namespace eventd::query_it
