// Small shared helpers of the access module: the header field names (§3.1.1 / §13.1, the
// same nine as query/ast.hpp) and ASCII case folding for pattern matching.
#pragma once

#include <algorithm>
#include <array>
#include <string>
#include <string_view>

namespace eventd::access {

// Every record carries these keys (context: decided record shape); anything else is payload.
inline constexpr std::array<std::string_view, 9> kHeaderNames = {
    "boot_id",         "timestamp",       "cpu_id",        "sequence",     "origin_class",
    "event_type",      "effective_token_guid", "true_token_guid", "process_guid",
};

inline bool is_header_name(std::string_view name) {
    return std::find(kHeaderNames.begin(), kHeaderNames.end(), name) != kHeaderNames.end();
}

inline char fold(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

inline std::string lower_ascii(std::string_view text) {
    std::string out(text);
    for (char& c : out) c = fold(c);
    return out;
}

}  // namespace eventd::access
