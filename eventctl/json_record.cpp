#include "json_record.hpp"

#include <cerrno>
#include <cmath>

#include <nlohmann/json.hpp>

#include "base/display_escape.hpp"
#include "msgpack/reader.hpp"
#include "scalar_text.hpp"
#include "value_walk.hpp"
#include "utf8.hpp"

namespace eventctl {
namespace {

namespace msgpack = eventd::msgpack;

// The uncommon string (escapes, invalid UTF-8, C1 and bidi controls) is handed to nlohmann, so
// that its escaping rules stay the only ones: \" \\ \b \f \n \r \t, \u00XX for other control
// characters, U+FFFD for bytes that are not UTF-8; then base::escape_json_invisibles.
// C1 and bidirectional controls, which JSON allows raw, become \uXXXX (issue 39): the same
// value for a JSON reader, nothing invisible for a person who looks at the line.
void append_escaped_by_nlohmann(std::string& out, std::string_view text) {
    std::string json = nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    base::escape_json_invisibles(json);
    out += json;
}

// Valid UTF-8 without control characters, quotes or backslashes is its own JSON text.
void append_json_string(std::string& out, std::string_view text) {
    bool ascii = true;
    for (const char c : text) {
        const auto b = static_cast<uint8_t>(c);
        if (b < 0x20 || b == 0x7f || c == '"' || c == '\\') return append_escaped_by_nlohmann(out, text);
        if (b >= 0x80) ascii = false;
    }
    if (!ascii && (find_invalid_utf8(text) || base::needs_display_escape(text)))
        return append_escaped_by_nlohmann(out, text);
    out += '"';
    out += text;
    out += '"';
}

struct JsonStyle {
    static void string(std::string& out, std::string_view text) { append_json_string(out, text); }
    static void number(std::string& out, double value) {
        if (std::isfinite(value)) return append_finite_float(out, value);
        out += "{\"$float\":\"";
        out += non_finite_name(value);
        out += "\"}";
    }
    static void binary(std::string& out, std::string_view bytes) {
        out += "{\"$binary\":\"";
        append_hex(out, bytes);
        out += "\"}";
    }
    static void ext(std::string& out, int8_t type, std::string_view bytes) {
        out += "{\"$extension\":{\"type\":";
        append_signed(out, type);
        out += ",\"data\":\"";
        append_hex(out, bytes);
        out += "\"}}";
    }
};

}  // namespace

base::Status append_json_record(std::string& out, std::span<const uint8_t> record) {
    msgpack::Reader in(record, msgpack::kRecordMaxDepth, msgpack::MapKeys::any);
    if (auto st = append_walked_value<JsonStyle>(out, in, 0); !st) return st;
    if (!in.at_end()) return base::Error{EPROTO, "bytes after the end of a record"};
    return {};
}

}  // namespace eventctl
