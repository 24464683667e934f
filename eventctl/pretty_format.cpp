#include "pretty_format.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <optional>

#include "base/display_escape.hpp"
#include "msgpack/reader.hpp"
#include "scalar_text.hpp"
#include "value_walk.hpp"

namespace eventctl {
namespace {

namespace msgpack = eventd::msgpack;

// A key goes bare unless it could be misread: blanks, '=', quotes, or anything the display
// escaper would change (base/display_escape.hpp).
bool needs_quotes(std::string_view key) {
    if (key.empty()) return true;
    for (const char c : key)
        if (c == ' ' || c == '=' || c == '"') return true;
    return base::needs_display_escape(key);
}

void append_pretty_key(std::string& out, std::string_view key) {
    if (needs_quotes(key)) return append_pretty_string(out, key);
    out += key;
}

// Nested keys are always quoted inside braces, like JSON.
struct PrettyStyle {
    static void string(std::string& out, std::string_view text) { append_pretty_string(out, text); }
    static void number(std::string& out, double value) {
        if (std::isfinite(value)) return append_finite_float(out, value);
        out += non_finite_name(value);
    }
    static void binary(std::string& out, std::string_view bytes) {
        out += "bin:";
        append_hex(out, bytes);
    }
    static void ext(std::string& out, int8_t type, std::string_view bytes) {
        out += "ext(";
        append_signed(out, type);
        out += "):";
        append_hex(out, bytes);
    }
};

bool is_time_key(std::string_view key) {
    constexpr std::string_view kSuffix = "_timestamp";
    return key == "timestamp" || (key.size() > kSuffix.size() && key.ends_with(kSuffix));
}

// The next value when it is an integer that fits int64 (consumed); otherwise nothing is consumed.
std::optional<int64_t> next_integer(msgpack::Reader& in) {
    msgpack::Reader peek = in;
    auto item = peek.next();
    if (!item) return std::nullopt;
    if (item->kind == msgpack::Kind::int_unsigned && item->unsigned_value <= uint64_t(INT64_MAX)) {
        in = peek;
        return static_cast<int64_t>(item->unsigned_value);
    }
    if (item->kind == msgpack::Kind::int_signed) {
        in = peek;
        return item->signed_value;
    }
    return std::nullopt;
}

base::Status expect_end(const msgpack::Reader& in) {
    if (!in.at_end()) return base::Error{EPROTO, "bytes after the end of a record"};
    return {};
}

}  // namespace

void append_pretty_string(std::string& out, std::string_view text) {
    out.push_back('"');
    base::append_display_escaped(out, text, '"');
    out.push_back('"');
}

std::string pretty_string(std::string_view text) {
    std::string out;
    out.reserve(text.size() + 2);
    append_pretty_string(out, text);
    return out;
}

std::string pretty_key(std::string_view key) {
    std::string out;
    append_pretty_key(out, key);
    return out;
}

base::Status append_pretty_value(std::string& out, std::span<const uint8_t> value) {
    msgpack::Reader in(value, msgpack::kRecordMaxDepth, msgpack::MapKeys::any);
    if (auto st = append_walked_value<PrettyStyle>(out, in, 0); !st) return st;
    return expect_end(in);
}

base::Status append_pretty_record(std::string& out, std::span<const uint8_t> record, TimeZone zone) {
    msgpack::Reader in(record, msgpack::kRecordMaxDepth, msgpack::MapKeys::any);
    auto pairs = in.map_header();
    if (!pairs) return pairs.error();
    for (uint32_t i = 0; i < pairs.value(); ++i) {
        if (i > 0) out += ' ';
        auto key = in.string();
        if (!key) return key.error();
        append_pretty_key(out, key.value());
        out += '=';
        if (is_time_key(key.value())) {
            if (const auto ns = next_integer(in)) {
                out += rfc3339(*ns, zone);
                continue;
            }
        }
        if (auto st = append_walked_value<PrettyStyle>(out, in, 1); !st) return st;
    }
    return expect_end(in);
}

base::Result<std::vector<PrettyCell>> pretty_cells(std::span<const uint8_t> record, TimeZone zone) {
    msgpack::Reader in(record, msgpack::kRecordMaxDepth, msgpack::MapKeys::any);
    auto pairs = in.map_header();
    if (!pairs) return pairs.error();
    // The header's count is not trusted for the allocation: each pair takes at least 2 bytes.
    std::vector<PrettyCell> cells;
    cells.reserve(std::min<size_t>(pairs.value(), record.size() / 2));
    for (uint32_t i = 0; i < pairs.value(); ++i) {
        PrettyCell& cell = cells.emplace_back();
        auto key = in.string();
        if (!key) return key.error();
        cell.key = std::string(key.value());
        if (is_time_key(cell.key)) {
            if (const auto ns = next_integer(in)) {
                cell.text = rfc3339(*ns, zone);
                continue;
            }
        }
        msgpack::Reader peek = in;
        auto item = peek.next();
        if (!item) return item.error();
        if (item->kind == msgpack::Kind::string) {
            in = peek;
            append_pretty_string(cell.text, item->bytes);
            cell.text = cell.text.substr(1, cell.text.size() - 2);  // the quotes
            continue;
        }
        cell.null = item->kind == msgpack::Kind::nil;
        cell.numeric = item->kind == msgpack::Kind::int_unsigned || item->kind == msgpack::Kind::int_signed ||
                       item->kind == msgpack::Kind::float32 || item->kind == msgpack::Kind::float64;
        if (auto st = append_walked_value<PrettyStyle>(cell.text, in, 1); !st) return st.error();
    }
    if (auto st = expect_end(in); !st) return st.error();
    return cells;
}

}  // namespace eventctl
