// How many terminal columns text takes, for laying out the pretty view (pretty_wrap.hpp): what
// wcwidth(3) answers in a UTF-8 locale, without depending on the locale eventctl runs in.
//   2   East Asian Wide and Fullwidth characters (CJK, Hangul syllables, fullwidth forms, most
//       emoji pictographs)
//   0   combining marks, variation selectors, zero-width spaces and joiners, the byte-order mark
//   1   everything else
// The ranges are the common ones of Unicode's EastAsianWidth.txt and of the Mn/Me categories, not
// every one: a terminal may draw a rare character one column wider or narrower than counted here.
#pragma once

#include <cstddef>
#include <string_view>

namespace eventctl {

// The character that starts at text[i]: its length in bytes and the columns it takes. A byte
// that does not start a well-formed UTF-8 character counts as one byte of one column (the
// pretty view never writes one: it escapes them as \xNN).
struct CharColumns {
    std::size_t bytes = 1;
    int columns = 1;
};
CharColumns char_columns_at(std::string_view text, std::size_t i);

std::size_t display_columns(std::string_view text);

}  // namespace eventctl
