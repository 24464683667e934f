// An alert (issue 41; docs/DETECTION.md "Alerts"): the row a rule's match on an audit event
// becomes, written through the shard writers like any row — chained, sealed, forwarded, and
// read under the policy's rules for alert.* (eventd's own namespace: no emitter may write it,
// base/reserved_types.hpp).
//
//   event_type  alert.<level>            (alert.informational … alert.critical)
//   timestamp   the triggering event's   so that evaluating that event again makes the same
//   boot_id     the triggering event's   row, which the writer's duplicate check stores once
//   payload     rule_id, title, level, tags, rule_file,
//               event:  {boot_id, cpu_id, sequence, event_type, timestamp} of the trigger,
//               fields: {<Sigma field>: [its values in the trigger], …} for every field the
//                       rule reads (docs/DETECTION.md "Field mapping")
//
// Like eventd's synthetic records it has no sequence, origin class or identity: the policy's
// `self` never makes an alert visible to the user whose process triggered it.
#pragma once

#include <nlohmann/json.hpp>

#include "base/result.hpp"
#include "eventd/detect/rule_set.hpp"
#include "store/event_row.hpp"

namespace eventd::detect {

constexpr char kAlertTypePrefix[] = "alert.";

// The alert of `rule` on `record` (a stored audit event as a query returns it: header fields
// and payload keys). Errors: the record lacks its boot_id or timestamp (no stored event does).
base::Result<store::EventRow> make_alert(const LoadedRule& rule, const nlohmann::json& record);

// Whether `row` is an alert (its duplicate check then spans every boot id: see make_alert).
bool is_alert(const store::EventRow& row);

}  // namespace eventd::detect
