// --format pretty (the default): one line per record, `key=value` pairs separated by spaces,
// in eventd's key order, written while walking the record's msgpack bytes once (no tree) — the
// default view of whole records then lays that line out for the terminal (pretty_wrap.hpp):
//   timestamp=2025-11-22T16:55:22.678123456Z cpu_id=1 event_type="kacs.access_check" user="alice\nbob" ok=true
// Strings are quoted and escaped by base/display_escape.hpp (\n, \t, \", \\, \u00XX for other C0
// and C1 controls, \uXXXX for bidirectional controls, \xNN for bytes that are not UTF-8), so a
// record never spans lines and nothing in it steers the terminal. Other values:
//   null, true/false, integers, floats (nan, +inf, -inf; scalar_text.hpp), bin:<hex>, ext(N):<hex>,
//   nested maps and arrays compactly: {"k":1,"l":[1,"x"]}
// A key is written bare unless it contains spaces, '=', quotes, or anything the escaper changes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "time_text.hpp"

namespace eventctl {

void append_pretty_string(std::string& out, std::string_view text);  // quoted and escaped
std::string pretty_string(std::string_view text);
std::string pretty_key(std::string_view key);

// One msgpack value (`eventctl status` cells), and one record without the newline. The bytes
// were checked by protocol::parse_reply(); an error is still returned, never a crash, if they are not one
// well-formed msgpack value. In a record, the integer values of `timestamp` and of keys ending
// in `_timestamp` (synthetic.gap's) are event times: written as RFC 3339 in `zone`
// (time_text.hpp), unquoted.
base::Status append_pretty_value(std::string& out, std::span<const uint8_t> value);
base::Status append_pretty_record(std::string& out, std::span<const uint8_t> record, TimeZone zone = TimeZone::utc);

// One record's pairs as table cells (the pretty format's columns for homogeneous results,
// record_writer.cpp): the same text as key=value, except that strings lose their quotes.
// `numeric`: an integer or float that is not an event time (right-aligned).
struct PrettyCell {
    std::string key;
    std::string text;
    bool numeric = false;
    bool null = false;  // nil: does not decide a column's alignment
};
base::Result<std::vector<PrettyCell>> pretty_cells(std::span<const uint8_t> record, TimeZone zone);

}  // namespace eventctl
