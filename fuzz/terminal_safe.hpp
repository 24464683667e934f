// What "nothing raw reaches a terminal" means, checked independently of the escaper
// (base/display_escape.hpp) by the fuzz targets that write human views: the text is valid
// UTF-8 and holds no C0 control (tab excepted where `allow_tab`), no DEL, no C1 control, and no
// bidirectional or line control (U+061C, U+200E, U+200F, U+2028, U+2029, U+202A–U+202E,
// U+2066–U+2069). Decoding here is its own, so a bug in the escaper's decoder is not shared.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace eventd::fuzz {

// nullopt when `text` is safe; otherwise what is wrong and where.
inline std::optional<std::string> terminal_unsafe(std::string_view text) {
    for (size_t i = 0; i < text.size();) {
        const auto b = static_cast<uint8_t>(text[i]);
        const std::string at = " at byte " + std::to_string(i);
        if (b < 0x80) {
            if (b < 0x20 || b == 0x7f) return "raw control 0x" + std::to_string(b) + at;
            ++i;
            continue;
        }
        size_t n = b >= 0xf0 && b <= 0xf4 ? 4 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xc2 && b <= 0xdf ? 2 : 0;
        if (n == 0 || i + n > text.size()) return "invalid UTF-8" + at;
        uint32_t c = b & (n == 2 ? 0x1f : n == 3 ? 0x0f : 0x07);
        for (size_t k = 1; k < n; ++k) {
            const auto t = static_cast<uint8_t>(text[i + k]);
            if ((t & 0xc0) != 0x80) return "invalid UTF-8" + at;
            c = (c << 6) | (t & 0x3f);
        }
        const uint32_t minimum = n == 2 ? 0x80 : n == 3 ? 0x800 : 0x10000;
        if (c < minimum || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return "invalid UTF-8" + at;
        if (c <= 0x9f || c == 0x061c || c == 0x200e || c == 0x200f || c == 0x2028 || c == 0x2029 ||
            (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069))
            return "raw U+" + std::to_string(c) + " (decimal)" + at;
        i += n;
    }
    return std::nullopt;
}

}  // namespace eventd::fuzz
