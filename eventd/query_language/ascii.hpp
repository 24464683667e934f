// ASCII character classes of the query language: locale-independent, unlike <cctype>.
#pragma once

namespace eventd::query {

inline bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace eventd::query
