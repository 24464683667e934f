// --format pretty (the default): one line per record, `key=value` pairs separated by spaces,
// in eventd's key order:
//   timestamp=1763830522678123456 cpu_id=1 event_type="kacs.access_check" user="alice\nbob" ok=true
// Strings are quoted with C/JSON escapes (\n, \t, \", \\, \u00XX for other control characters,
// \xNN for bytes that are not UTF-8), so a record never spans lines. Other values:
//   null, true/false, integers, floats (nan, +inf, -inf), bin:<hex>, ext(N):<hex>,
//   nested maps and arrays compactly: {"k":1,"l":[1,"x"]}
// A key is written bare unless it contains spaces, '=', quotes or control characters.
#pragma once

#include <string>

#include "json_tagging.hpp"

namespace eventctl {

std::string pretty_string(const std::string& text);  // quoted and escaped
std::string pretty_value(const Json& value);
std::string pretty_key(const std::string& key);
std::string pretty_record(const Json& record);       // without the newline

}  // namespace eventctl
