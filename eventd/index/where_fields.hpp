// The fields a query filters on, for adaptive-index accounting (PSD-008 §8.6.5): every header
// column or payload path named in a WHERE predicate, each once per query, plus `event_type`
// when the query has a type pattern (the pattern is a filter on event_type, §8.2.2). SINCE and
// UNTIL are not counted: timestamp is always indexed. SELECT, SORT and aggregations are not
// predicates and are not counted either.
#pragma once

#include <string>
#include <vector>

#include "eventd/query_language/ast.hpp"

namespace eventd::index {

// Sorted, without duplicates; names as written ("source.name").
std::vector<std::string> where_fields(const query::Query& q);

}  // namespace eventd::index
