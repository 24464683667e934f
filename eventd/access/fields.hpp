// Small shared helpers of the access module: the header field names (§3.1.1 / §13.1, from
// query/ast.hpp) and ASCII case folding for pattern matching.
#pragma once

#include <string>
#include <string_view>

#include "eventd/query_language/ast.hpp"

namespace eventd::access {

// Every record carries the header keys (query/ast.hpp, the one list); anything else is payload.
using query::is_header_name;
using query::kHeaderFieldCount;

inline char fold(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

inline std::string lower_ascii(std::string_view text) {
    std::string out(text);
    for (char& c : out) c = fold(c);
    return out;
}

}  // namespace eventd::access
