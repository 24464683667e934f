#include "base/base64url.hpp"

namespace base {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

int value_of(char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '-') return 62;
    if (c == '_') return 63;
    return -1;
}

}  // namespace

namespace {
std::string encode(std::span<const uint8_t> bytes, const char* alphabet, bool pad) {
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    uint32_t bits = 0;
    int held = 0;  // bits in `bits` not yet written
    for (const uint8_t b : bytes) {
        bits = (bits << 8) | b;
        held += 8;
        while (held >= 6) {
            held -= 6;
            out += alphabet[(bits >> held) & 63];
        }
    }
    if (held > 0) out += alphabet[(bits << (6 - held)) & 63];
    while (pad && out.size() % 4 != 0) out += '=';
    return out;
}
}  // namespace

std::string base64url_encode(std::span<const uint8_t> bytes) { return encode(bytes, kAlphabet, false); }

std::string base64_encode(std::span<const uint8_t> bytes) {
    return encode(bytes, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", true);
}

std::optional<std::vector<uint8_t>> base64url_decode(std::string_view text) {
    if (text.size() % 4 == 1) return std::nullopt;
    std::vector<uint8_t> out;
    out.reserve(text.size() * 3 / 4);
    uint32_t bits = 0;
    int held = 0;
    for (const char c : text) {
        const int v = value_of(c);
        if (v < 0) return std::nullopt;
        bits = (bits << 6) | uint32_t(v);
        held += 6;
        if (held >= 8) {
            held -= 8;
            out.push_back(uint8_t((bits >> held) & 0xff));
        }
    }
    if (held > 0 && (bits & ((1u << held) - 1)) != 0) return std::nullopt;  // non-canonical tail
    return out;
}

}  // namespace base
