#include "base/display_escape.hpp"

#include <cstdint>
#include <cstdio>

#include "base/utf8.hpp"

namespace base {
namespace {

// C1 controls, and the code points that reorder or break text without being seen.
bool is_invisible_control(char32_t c) {
    return (c >= 0x80 && c <= 0x9f) || c == 0x061c || c == 0x200e || c == 0x200f || c == 0x2028 || c == 0x2029 ||
           (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
}

void append_u_escape(std::string& out, char32_t c) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
    out += buf;
}

}  // namespace

void append_display_escaped(std::string& out, std::string_view text, char quote) {
    for (std::size_t i = 0; i < text.size();) {
        const char c = text[i];
        const auto b = static_cast<uint8_t>(c);
        if (c == '\\' || (quote != 0 && c == quote)) {
            out += '\\';
            out += c;
            ++i;
            continue;
        }
        if (b < 0x80) {
            if (c == '\n') {
                out += "\\n";
            } else if (c == '\r') {
                out += "\\r";
            } else if (c == '\t') {
                out += "\\t";
            } else if (b < 0x20 || b == 0x7f) {
                append_u_escape(out, b);
            } else {
                out += c;
            }
            ++i;
            continue;
        }
        const Utf8Char cp = decode_utf8_at(text, i);
        if (cp.length == 0) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(b));
            out += buf;
            ++i;
            continue;
        }
        if (is_invisible_control(cp.value)) {
            append_u_escape(out, cp.value);
        } else {
            out.append(text.substr(i, cp.length));
        }
        i += cp.length;
    }
}

std::string display_escaped(std::string_view text, char quote) {
    std::string out;
    out.reserve(text.size());
    append_display_escaped(out, text, quote);
    return out;
}

bool needs_display_escape(std::string_view text) {
    for (std::size_t i = 0; i < text.size();) {
        const auto b = static_cast<uint8_t>(text[i]);
        if (b < 0x80) {
            if (b < 0x20 || b == 0x7f || b == '\\') return true;
            ++i;
            continue;
        }
        const Utf8Char cp = decode_utf8_at(text, i);
        if (cp.length == 0 || is_invisible_control(cp.value)) return true;
        i += cp.length;
    }
    return false;
}

void escape_json_invisibles(std::string& json) {
    // Fast path: DEL, and every other such code point is encoded with a lead byte 0xc2, 0xd8, 0xe2.
    bool any = false;
    for (const char c : json) {
        const auto b = static_cast<uint8_t>(c);
        if (b == 0x7f || b == 0xc2 || b == 0xd8 || b == 0xe2) {
            any = true;
            break;
        }
    }
    if (!any) return;
    std::string out;
    out.reserve(json.size() + 16);
    for (std::size_t i = 0; i < json.size();) {
        if (json[i] == 0x7f) {  // JSON leaves DEL raw too
            append_u_escape(out, 0x7f);
            ++i;
            continue;
        }
        const Utf8Char cp = static_cast<uint8_t>(json[i]) < 0x80 ? Utf8Char{} : decode_utf8_at(json, i);
        if (cp.length != 0 && is_invisible_control(cp.value)) {
            append_u_escape(out, cp.value);
            i += cp.length;
            continue;
        }
        const std::size_t n = cp.length == 0 ? 1 : cp.length;
        out.append(json, i, n);
        i += n;
    }
    json = std::move(out);
}

}  // namespace base
