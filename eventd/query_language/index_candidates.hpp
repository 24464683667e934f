// Which fields may be in the desired index set (PSD-008 §3.3.6): the header columns event_type,
// origin_class, cpu_id, effective_token_guid, true_token_guid, process_guid and boot_id, and
// any payload path (an expression index over msgpack_extract). Not candidates: `timestamp`
// (always indexed, idx_events_timestamp, never managed), `sequence` (not in §3.3.6's list) and
// `payload` (the raw column MUST NOT get an index; in queries the name means the payload key
// "payload", which is refused too rather than produce an index whose name reads like one on
// the raw column). Used by `EVENTS INDEX` (the parser) and by the policy, which never admits a
// counted field that is not a candidate.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace eventd::query {

// nullopt when `field` (a name as written in queries) can be indexed; otherwise why not,
// phrased for the person who typed `EVENTS INDEX <field>`.
std::optional<std::string> candidate_problem(std::string_view field);
inline bool is_candidate(std::string_view field) { return !candidate_problem(field).has_value(); }
// A payload path (expression index, §3.3.9 is_expression = 1) rather than a header column.
bool is_expression_field(std::string_view field);

}  // namespace eventd::query
