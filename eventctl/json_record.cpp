#include "json_record.hpp"

#include <cerrno>
#include <cmath>

#include <nlohmann/json.hpp>

#include "msgpack/reader.hpp"
#include "scalar_text.hpp"
#include "utf8.hpp"

namespace eventctl {
namespace {

namespace msgpack = eventd::msgpack;

// The uncommon string (escapes, invalid UTF-8) is handed to nlohmann, so that its escaping
// rules stay the only ones: \" \\ \b \f \n \r \t, \u00XX for other control characters,
// U+FFFD for bytes that are not UTF-8.
void append_escaped_by_nlohmann(std::string& out, std::string_view text) {
    out += nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Valid UTF-8 without control characters, quotes or backslashes is its own JSON text.
void append_json_string(std::string& out, std::string_view text) {
    bool ascii = true;
    for (const char c : text) {
        const auto b = static_cast<uint8_t>(c);
        if (b < 0x20 || c == '"' || c == '\\') return append_escaped_by_nlohmann(out, text);
        if (b >= 0x80) ascii = false;
    }
    if (!ascii && find_invalid_utf8(text)) return append_escaped_by_nlohmann(out, text);
    out += '"';
    out += text;
    out += '"';
}

void append_json_float(std::string& out, double value) {
    if (std::isfinite(value)) return append_finite_float(out, value);
    out += "{\"$float\":\"";
    out += non_finite_name(value);
    out += "\"}";
}

kmes::Status append_json_value(std::string& out, msgpack::Reader& in, int depth) {
    if (depth > msgpack::kMaxDepth) {
        return kmes::Error{EPROTO, "a record nested deeper than " + std::to_string(msgpack::kMaxDepth) + " levels"};
    }
    auto next = in.next();
    if (!next) return next.error();
    const msgpack::Item& item = next.value();
    switch (item.kind) {
    case msgpack::Kind::nil: out += "null"; return {};
    case msgpack::Kind::boolean: out += item.boolean ? "true" : "false"; return {};
    case msgpack::Kind::int_signed: append_signed(out, item.signed_value); return {};
    case msgpack::Kind::int_unsigned: append_unsigned(out, item.unsigned_value); return {};
    case msgpack::Kind::float32:
    case msgpack::Kind::float64: append_json_float(out, item.float_value); return {};
    case msgpack::Kind::string: append_json_string(out, item.bytes); return {};
    case msgpack::Kind::binary:
        out += "{\"$binary\":\"";
        append_hex(out, item.bytes);
        out += "\"}";
        return {};
    case msgpack::Kind::ext:
        out += "{\"$extension\":{\"type\":";
        append_signed(out, item.ext_type);
        out += ",\"data\":\"";
        append_hex(out, item.bytes);
        out += "\"}}";
        return {};
    case msgpack::Kind::map:
        out += '{';
        for (uint32_t i = 0; i < item.count; ++i) {
            if (i > 0) out += ',';
            auto key = in.string();
            if (!key) return key.error();
            append_json_string(out, key.value());
            out += ':';
            if (auto st = append_json_value(out, in, depth + 1); !st) return st;
        }
        out += '}';
        return {};
    case msgpack::Kind::array:
        out += '[';
        for (uint32_t i = 0; i < item.count; ++i) {
            if (i > 0) out += ',';
            if (auto st = append_json_value(out, in, depth + 1); !st) return st;
        }
        out += ']';
        return {};
    }
    return kmes::Error{EPROTO, "a msgpack item of unknown kind"};
}

}  // namespace

kmes::Status append_json_record(std::string& out, std::span<const uint8_t> record) {
    msgpack::Reader in(record);
    if (auto st = append_json_value(out, in, 0); !st) return st;
    if (!in.at_end()) return kmes::Error{EPROTO, "bytes after the end of a record"};
    return {};
}

}  // namespace eventctl
