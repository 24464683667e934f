// Strict UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF), decoded
// one character at a time: for the display escaper (display_escape.hpp) and for the audit
// source's exact strings (a value that is valid UTF-8 is a msgpack str, anything else bin).
#pragma once

#include <cstddef>
#include <string_view>

namespace base {

struct Utf8Char {
    char32_t value = 0;
    std::size_t length = 0;  // 0: the byte at the position starts no valid UTF-8 sequence
};

Utf8Char decode_utf8_at(std::string_view text, std::size_t i);
bool is_valid_utf8(std::string_view text);

}  // namespace base
