#include "pretty_format.hpp"

#include <cmath>
#include <cstdio>

#include "utf8.hpp"

namespace eventctl {
namespace {

void append_escape(std::string& out, const char* format, unsigned value) {
    char buf[12];
    std::snprintf(buf, sizeof buf, format, value);
    out += buf;
}

// Length of the valid UTF-8 sequence at s[i], or 0 if the byte there does not start one.
std::size_t utf8_length_at(const std::string& s, std::size_t i) {
    const auto b = static_cast<uint8_t>(s[i]);
    const std::size_t len = b < 0x80 ? 1 : b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
    if (len == 0 || i + len > s.size()) return 0;
    return find_invalid_utf8(std::string_view(s).substr(i, len)) ? 0 : len;
}

bool needs_quotes(const std::string& key) {
    if (key.empty()) return true;
    for (const char c : key) {
        const auto b = static_cast<uint8_t>(c);
        if (b <= 0x20 || b == 0x7f || c == '=' || c == '"' || c == '\\') return true;
    }
    return static_cast<bool>(find_invalid_utf8(key));
}

}  // namespace

std::string pretty_string(const std::string& text) {
    std::string out;
    out.reserve(text.size() + 2);
    out.push_back('"');
    for (std::size_t i = 0; i < text.size();) {
        const auto b = static_cast<uint8_t>(text[i]);
        switch (b) {
        case '"': out += "\\\""; ++i; continue;
        case '\\': out += "\\\\"; ++i; continue;
        case '\n': out += "\\n"; ++i; continue;
        case '\r': out += "\\r"; ++i; continue;
        case '\t': out += "\\t"; ++i; continue;
        default: break;
        }
        if (b < 0x20 || b == 0x7f) {
            append_escape(out, "\\u%04x", b);
            ++i;
            continue;
        }
        const std::size_t len = utf8_length_at(text, i);
        if (len == 0) {
            append_escape(out, "\\x%02x", b);
            ++i;
            continue;
        }
        // C1 controls (U+0080..U+009F, encoded c2 80..c2 9f) steer terminals too.
        if (len == 2 && b == 0xc2 && static_cast<uint8_t>(text[i + 1]) < 0xa0) {
            append_escape(out, "\\u%04x", static_cast<uint8_t>(text[i + 1]));
            i += 2;
            continue;
        }
        out.append(text, i, len);
        i += len;
    }
    out.push_back('"');
    return out;
}

std::string pretty_value(const Json& value) {
    switch (value.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::boolean: return value.get<bool>() ? "true" : "false";
    case Json::value_t::string: return pretty_string(value.get_ref<const std::string&>());
    case Json::value_t::number_float: {
        const double d = value.get<double>();
        if (std::isnan(d)) return "nan";
        if (std::isinf(d)) return d > 0 ? "+inf" : "-inf";
        return value.dump();
    }
    case Json::value_t::binary: {
        const auto& bin = value.get_binary();
        if (bin.has_subtype()) return "ext(" + std::to_string(ext_type(bin)) + "):" + to_hex(bin);
        return "bin:" + to_hex(bin);
    }
    case Json::value_t::object: {
        std::string out = "{";
        bool first = true;
        for (const auto& [k, v] : value.items()) {
            if (!first) out += ',';
            first = false;
            out += pretty_string(k) + ":" + pretty_value(v);
        }
        return out + "}";
    }
    case Json::value_t::array: {
        std::string out = "[";
        bool first = true;
        for (const auto& v : value) {
            if (!first) out += ',';
            first = false;
            out += pretty_value(v);
        }
        return out + "]";
    }
    default:
        return value.dump();  // integers
    }
}

std::string pretty_key(const std::string& key) { return needs_quotes(key) ? pretty_string(key) : key; }

std::string pretty_record(const Json& record) {
    std::string line;
    for (const auto& [k, v] : record.items()) {
        if (!line.empty()) line += ' ';
        line += pretty_key(k) + "=" + pretty_value(v);
    }
    return line;
}

}  // namespace eventctl
