// UTF-8 validation of query text: eventd takes the query as a msgpack string, which must be
// UTF-8, so eventctl rejects anything else before connecting and says where it breaks.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace eventctl {

struct Utf8Problem {
    std::size_t offset = 0;  // byte offset where the invalid character starts
    std::string what;        // e.g. "byte 0xff cannot start a character"
};

// Strict RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF.
std::optional<Utf8Problem> find_invalid_utf8(std::string_view text);

}  // namespace eventctl
