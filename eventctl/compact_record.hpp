// The default pretty view of whole records (issue 24 item 5): readable in a 120-column terminal.
// A record eventd sends carries every header field; the ones that are wide and rarely read —
// boot_id, the three identity GUIDs (36 characters each), origin_class, cpu_id, sequence —
// leave the record, and its subject (subject_name.hpp) takes the place of the two token GUIDs,
// so that it reads: the time, the type, the subject, then the payload's fields:
//
//   eventd sends                                          the default view shows
//   boot_id timestamp cpu_id sequence origin_class        timestamp
//   event_type effective_token_guid true_token_guid       event_type subject="alice→root"
//   process_guid <payload fields>                         <payload fields>
//
// `subject` is not a field of the record (a query cannot name it): it is eventctl's reading of
// the two tokens, left out when both are null. The lines are then wrapped to the terminal
// (pretty_wrap.hpp). `--all-fields` keeps everything on one line (as `journalctl -o verbose`
// keeps every field); jsonl, json and msgpack are never shortened, and a record that is not
// whole (a SELECT, an aggregate) is left as it came.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "subject_name.hpp"

namespace eventctl {

// The key under which a row of a reserved namespace (synthetic., audit., kmes., bpf., alert.)
// that does not carry the product's origin shows it, right after event_type (issue 39; e.g.
// `event_type="audit.syscall" origin!="userspace (0), not kmes-shimd's audit source: …"`). Made
// from the header only: a payload cannot remove it.
inline constexpr std::string_view kOriginMarkKey = "origin!";

// The key the subject is shown under.
inline constexpr std::string_view kSubjectKey = "subject";

// `record` without the wide header fields and with its subject, when it is a whole record (it
// has boot_id and the three identity GUID keys); nullopt when it is not (or is not a map): show
// it unchanged.
std::optional<std::vector<uint8_t>> compact_record(std::span<const uint8_t> record, SubjectNames& names);

}  // namespace eventctl
