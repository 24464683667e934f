// The GUID text form (guid_text.hpp).
#include "base/guid_text.hpp"

namespace base {
namespace {

// A dash comes before these bytes in the text form.
constexpr bool dash_before(std::size_t byte) { return byte == 4 || byte == 6 || byte == 8 || byte == 10; }

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

}  // namespace

void write_guid_text(std::span<const uint8_t, 16> guid, char* out) {
    static constexpr char kHex[] = "0123456789abcdef";
    for (std::size_t i = 0; i < guid.size(); ++i) {
        if (dash_before(i)) *out++ = '-';
        *out++ = kHex[guid[i] >> 4];
        *out++ = kHex[guid[i] & 0xf];
    }
}

std::string guid_text(std::span<const uint8_t, 16> guid) {
    std::string s(kGuidTextLength, '\0');
    write_guid_text(guid, s.data());
    return s;
}

std::optional<std::array<uint8_t, 16>> parse_guid(std::string_view text) {
    if (text.size() == kGuidTextLength + 2 && text.front() == '{' && text.back() == '}')
        text = text.substr(1, kGuidTextLength);
    if (text.size() != kGuidTextLength) return std::nullopt;
    std::array<uint8_t, 16> out{};
    std::size_t pos = 0;
    for (std::size_t i = 0; i < out.size(); ++i) {
        if (dash_before(i) && text[pos++] != '-') return std::nullopt;
        const int hi = hex_value(text[pos]);
        const int lo = hex_value(text[pos + 1]);
        if (hi < 0 || lo < 0) return std::nullopt;
        out[i] = static_cast<uint8_t>(hi << 4 | lo);
        pos += 2;
    }
    return out;
}

}  // namespace base
