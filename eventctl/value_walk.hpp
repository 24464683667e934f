// The walk JSON and pretty output share (json_record.hpp, pretty_format.hpp): one msgpack value
// written as text while reading it — null, true/false and integers the same in both formats,
// containers as {"key":value,…} and [value,…] with keys written as strings (a
// key that is not a string as the string of its text) — and the values the
// formats show differently handed to the format's Style:
//
//   struct Style {
//       static void string(std::string& out, std::string_view text);   // values and keys
//       static void number(std::string& out, double value);             // float32 / float64
//       static void binary(std::string& out, std::string_view bytes);
//       static void ext(std::string& out, int8_t type, std::string_view bytes);
//   };
#pragma once

#include <cerrno>
#include <string>

#include "base/result.hpp"
#include "msgpack/reader.hpp"
#include "scalar_text.hpp"

namespace eventctl {

// A key that is not a string is written as the string of its own text, escaped once more
// for each key it sits in: its text doubles (quotes and backslashes) per level, so keys
// nested in keys grow the output as 2^levels — 100 bytes of msgpack wrote gigabytes and hung
// eventctl (fuzz/eventctl_output_fuzz.cpp). Past this many levels the record is refused.
inline constexpr int kMaxKeyNesting = 4;

// `key_nesting`: how many keys that are not strings enclose this value.
template <class Style>
base::Status append_walked_value(std::string& out, eventd::msgpack::Reader& in, int depth, int key_nesting = 0) {
    namespace msgpack = eventd::msgpack;
    auto next = in.next();
    if (!next) return next.error();
    const msgpack::Item& item = next.value();
    // `depth` containers are open around this value; the reader bounds the ones it opens.
    if (item.kind == msgpack::Kind::map || item.kind == msgpack::Kind::array) {
        if (auto st = in.check_depth(depth + 1); !st) return st;
    }
    switch (item.kind) {
        case msgpack::Kind::nil:
            out += "null";
            return {};
        case msgpack::Kind::boolean:
            out += item.boolean ? "true" : "false";
            return {};
        case msgpack::Kind::int_signed:
            append_signed(out, item.signed_value);
            return {};
        case msgpack::Kind::int_unsigned:
            append_unsigned(out, item.unsigned_value);
            return {};
        case msgpack::Kind::float32:
        case msgpack::Kind::float64:
            Style::number(out, item.float_value);
            return {};
        case msgpack::Kind::string:
            Style::string(out, item.bytes);
            return {};
        case msgpack::Kind::binary:
            Style::binary(out, item.bytes);
            return {};
        case msgpack::Kind::ext:
            Style::ext(out, item.ext_type, item.bytes);
            return {};
        case msgpack::Kind::map:
            out += '{';
            for (uint32_t i = 0; i < item.count; ++i) {
                if (i > 0) out += ',';
                if (in.next_is_string()) {
                    auto key = in.string();
                    if (!key) return key.error();
                    Style::string(out, key.value());
                } else {
                    // A key that is not a string (msgpack allows any): written as the string
                    // of its own text, 1 → "1", so that JSON output stays JSON.
                    if (key_nesting == kMaxKeyNesting) {
                        return base::Error{EPROTO, "map keys that are not strings nest more than " +
                                                       std::to_string(kMaxKeyNesting) + " deep inside each other"};
                    }
                    std::string key;
                    if (auto st = append_walked_value<Style>(key, in, depth + 1, key_nesting + 1); !st) return st;
                    Style::string(out, key);
                }
                out += ':';
                if (auto st = append_walked_value<Style>(out, in, depth + 1, key_nesting); !st) return st;
            }
            out += '}';
            return {};
        case msgpack::Kind::array:
            out += '[';
            for (uint32_t i = 0; i < item.count; ++i) {
                if (i > 0) out += ',';
                if (auto st = append_walked_value<Style>(out, in, depth + 1, key_nesting); !st) return st;
            }
            out += ']';
            return {};
    }
    return base::Error{EPROTO, "a msgpack item of unknown kind"};
}

}  // namespace eventctl
