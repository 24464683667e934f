#include "base/utf8.hpp"

#include <cstdint>

namespace base {

Utf8Char decode_utf8_at(std::string_view text, std::size_t i) {
    const auto b0 = static_cast<uint8_t>(text[i]);
    if (b0 < 0x80) return {b0, 1};
    std::size_t length = 0;
    char32_t value = 0;
    char32_t minimum = 0;
    if (b0 >= 0xc2 && b0 <= 0xdf) {
        length = 2, value = b0 & 0x1f, minimum = 0x80;
    } else if (b0 >= 0xe0 && b0 <= 0xef) {
        length = 3, value = b0 & 0x0f, minimum = 0x800;
    } else if (b0 >= 0xf0 && b0 <= 0xf4) {
        length = 4, value = b0 & 0x07, minimum = 0x10000;
    } else {
        return {};
    }
    if (i + length > text.size()) return {};
    for (std::size_t k = 1; k < length; ++k) {
        const auto b = static_cast<uint8_t>(text[i + k]);
        if ((b & 0xc0) != 0x80) return {};
        value = (value << 6) | (b & 0x3f);
    }
    if (value < minimum || value > 0x10ffff || (value >= 0xd800 && value <= 0xdfff)) return {};
    return {value, length};
}

bool is_valid_utf8(std::string_view text) {
    for (std::size_t i = 0; i < text.size();) {
        if (static_cast<uint8_t>(text[i]) < 0x80) {
            ++i;
            continue;
        }
        const Utf8Char c = decode_utf8_at(text, i);
        if (c.length == 0) return false;
        i += c.length;
    }
    return true;
}

}  // namespace base
