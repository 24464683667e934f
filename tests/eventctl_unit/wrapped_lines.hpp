// Reading the default view's wrapped output back (eventctl/pretty_wrap.hpp), for the tests.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "eventctl/pretty_wrap.hpp"

namespace eventctl::test {

inline std::vector<std::string> lines_of(std::string_view text) {
    std::vector<std::string> lines;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t end = std::min(text.find('\n', start), text.size());
        lines.emplace_back(text.substr(start, end - start));
        start = end + 1;
    }
    return lines;
}

// The one line a wrapped record was: a value's break (a newline and kValueIndent spaces) goes,
// a break between fields (a newline and kFieldIndent spaces) was one space. No field starts with
// a space, so a newline followed by kValueIndent spaces is always a value's break.
inline std::string unwrapped(std::string_view text) {
    const std::string value_break = "\n" + std::string(kValueIndent, ' ');
    const std::string field_break = "\n" + std::string(kFieldIndent, ' ');
    std::string line;
    for (std::size_t i = 0; i < text.size();) {
        if (text.substr(i, value_break.size()) == value_break) {
            i += value_break.size();
        } else if (text.substr(i, field_break.size()) == field_break) {
            line += ' ';
            i += field_break.size();
        } else {
            line += text[i++];
        }
    }
    return line;
}

}  // namespace eventctl::test
