// A Sigma rule's `condition` (Sigma specification, "Condition"): the boolean expression over
// the detection's named search identifiers.
//
//   expression := or
//   or         := and ("or" and)*
//   and        := not ("and" not)*
//   not        := "not" not | primary                 (not binds tighter than and, and than or)
//   primary    := "(" expression ")" | quantifier | identifier
//   quantifier := ("1" | "any" | "all") "of" (pattern | "them")
//   pattern    := an identifier with "*" wildcards ("selection_*")
//
// `them` is every identifier of the detection except those starting with "_" (pySigma's rule);
// a pattern must match at least one. Aggregations (`| count() by …`), `near` and anything else
// are refused with the reason: a rule is compiled whole or not at all.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"

namespace eventd::detection {

struct Condition {
    enum class Kind { identifier, all_of, any_of, and_, or_, not_ };
    Kind kind = Kind::identifier;
    std::string name;                                  // identifier
    std::vector<std::string> names;                    // all_of / any_of: the identifiers they expand to
    std::vector<std::unique_ptr<Condition>> operands;  // and_ / or_ (two or more), not_ (one)
};

// Parses `text` against the detection's identifiers. Errors (ErrorCode::invalid, or
// not_supported for what Sigma has and this engine does not) name the position and the token.
base::Result<std::unique_ptr<Condition>> parse_condition(std::string_view text,
                                                         const std::set<std::string>& identifiers);

// The identifiers `condition` reads, each once, sorted.
std::set<std::string> identifiers_of(const Condition& condition);

}  // namespace eventd::detection
