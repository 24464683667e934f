// Whether one query table case (case_file.hpp) got what it expects: the check shared by the
// end-to-end runner (real eventctl against a real eventd, case_runner.hpp) and the in-process
// runner (query::execute against the fixture store, test_store_cases.cpp).
#pragma once

#include <optional>
#include <string>

#include "case_file.hpp"
#include "support/eventctl_runner.hpp"

namespace eventd::query_it {

// nullopt when `r` matches the case; else a report: file:line, the query, what was expected
// and what was got (stdout, stderr, exit code). Error texts may carry eventctl's "eventctl: "
// prefix; the tables hold eventd's message without it.
std::optional<std::string> check_outcome(const QueryCase& c, const RunResult& r);

}  // namespace eventd::query_it
