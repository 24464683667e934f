// Runs one QueryCase (case_file.hpp) through the real eventctl against a QueryEnv.
#pragma once

#include <optional>
#include <string>

#include "case_file.hpp"
#include "support/query_env.hpp"

namespace eventd::query_it {

// nullopt when eventctl's output matches the case; else a report: file:line, the query, what
// was expected and what eventctl printed (stdout, stderr, exit code).
std::optional<std::string> run_case(QueryEnv& env, const QueryCase& c);

// Run every case of every *.test file in `dir`; one Catch2 CHECK per case (failures listed with
// their report), and a summary line "N of M cases pass" on stdout.
void run_case_dir(QueryEnv& env, const std::string& dir);

// $QUERY_CASES_DIR
std::string cases_dir();

}  // namespace eventd::query_it
