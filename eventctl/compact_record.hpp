// The default pretty view of whole records (issue 24 item 5): readable in a 120-column terminal.
// A record eventd sends carries every header field; the ones that are wide and rarely read —
// boot_id, the three identity GUIDs (36 characters each), origin_class, cpu_id, sequence —
// leave the line, so that it reads: time, type, then the payload's fields. `--all-fields`
// keeps everything (as `journalctl -o verbose` does); jsonl, json and msgpack are never
// shortened, and a record that is not whole (a SELECT, an aggregate) is left as it came.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace eventctl {

// `record` without the wide header fields, when it is a whole record (it has boot_id and the
// three identity GUID keys); nullopt when it is not (or is not a map): show it unchanged.
std::optional<std::vector<uint8_t>> without_wide_header(std::span<const uint8_t> record);

}  // namespace eventctl
