// Query text → Query (PSD-008 §8.6.1). Hand-written recursive descent (DESIGN.md §6: the query
// parser is ours). Keywords are case-insensitive; clauses after the primary selector come in
// any order. Grammar and examples: docs/query-language.md.
#pragma once

#include <cstdint>
#include <string_view>

#include "eventd/query_language/ast.hpp"
#include "base/result.hpp"

namespace eventd::query {

// Parse `text`. Relative time literals ("1h ago", "today") resolve against `now_ns` (ns since
// the epoch, UTC). Errors are EINVAL with a message of the form
//   "parse error at position 17: expected a comparison operator, found 'foo'"
// (position = 1-based character offset) — never SQL, never internal names. LOGS, METRIC,
// cross-type filters and INDEX parse far enough to say "… is not supported".
base::Result<Query> parse(std::string_view text, int64_t now_ns);

}  // namespace eventd::query
