// JSON output of records (--format jsonl and json), written while walking each record's msgpack
// bytes once: no tree, and no heap allocation for the usual record (the caller's string grows
// once and is reused). Values JSON cannot carry are tagged so that every line parses and nothing
// is lost:
//   bin                 → {"$binary":"<hex>"}
//   ext (type N)        → {"$extension":{"type":N,"data":"<hex>"}}      N is the signed msgpack type
//   NaN / +inf / -inf   → {"$float":"nan"} / {"$float":"+inf"} / {"$float":"-inf"}
// Everything else is written exactly as nlohmann::ordered_json's compact dump (with
// error_handler_t::replace) writes the decoded record — eventctl's output before this writer
// existed, and the reference tests/eventctl_unit compares it with: keys in wire order, strings
// escaped as nlohmann escapes them (UTF-8 kept, invalid UTF-8 → U+FFFD), floats in its shortest
// round-trip form (scalar_text.hpp).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "base/result.hpp"

namespace eventctl {

// Appends one compact line of JSON (no newline). The record was checked by protocol::parse_reply(); an
// error is still returned, never a crash, if the bytes are not one well-formed msgpack value.
base::Status append_json_record(std::string& out, std::span<const uint8_t> record);

}  // namespace eventctl
