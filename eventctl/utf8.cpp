// Strict UTF-8 check (RFC 3629 table 3-7 of the Unicode standard): the first byte decides the
// length and the allowed range of the second byte, which is what rules out overlong forms,
// surrogates and code points above U+10FFFF.
#include "utf8.hpp"

#include <cstdint>
#include <cstdio>

namespace eventctl {
namespace {

std::string hex_byte(uint8_t b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "0x%02x", b);
    return buf;
}

}  // namespace

std::optional<Utf8Problem> find_invalid_utf8(std::string_view text) {
    const auto* s = reinterpret_cast<const uint8_t*>(text.data());
    const std::size_t n = text.size();
    std::size_t i = 0;
    while (i < n) {
        const uint8_t b = s[i];
        if (b < 0x80) {
            ++i;
            continue;
        }
        std::size_t len = 0;
        uint8_t lo = 0x80, hi = 0xbf;  // allowed range of the second byte
        if (b >= 0xc2 && b <= 0xdf) {
            len = 2;
        } else if (b >= 0xe0 && b <= 0xef) {
            len = 3;
            if (b == 0xe0) lo = 0xa0;  // overlong
            if (b == 0xed) hi = 0x9f;  // surrogates
        } else if (b >= 0xf0 && b <= 0xf4) {
            len = 4;
            if (b == 0xf0) lo = 0x90;  // overlong
            if (b == 0xf4) hi = 0x8f;  // above U+10FFFF
        } else {
            return Utf8Problem{i, "byte " + hex_byte(b) + " cannot start a character"};
        }
        if (i + len > n) return Utf8Problem{i, "the text ends inside a " + std::to_string(len) + "-byte character"};
        for (std::size_t k = 1; k < len; ++k) {
            const uint8_t c = s[i + k];
            const uint8_t min = k == 1 ? lo : 0x80;
            const uint8_t max = k == 1 ? hi : 0xbf;
            if (c < min || c > max) {
                return Utf8Problem{
                    i, "the character starting with " + hex_byte(b) + " is cut short by byte " + hex_byte(c)};
            }
        }
        i += len;
    }
    return std::nullopt;
}

}  // namespace eventctl
