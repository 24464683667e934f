// A forwarded record back into a row (issue 12 part 3; docs/FORWARD.md "Collector"). The body
// eventd-forward publishes is the record a host's eventd served (PSD-008 §8.8: the header
// fields merged with the payload map's keys, eventd/query/record.hpp); this splits it again:
//
//   boot_id, timestamp, cpu_id, sequence, origin_class, event_type,
//   effective_token_guid, true_token_guid, process_guid  → the columns of the same name
//                                                        (store/event_columns.hpp)
//   every other key, its value's bytes as they came   → the payload map, after
//   host: <Eventd-Host header>                        (first key: `WHERE host == "web-3"`)
//
// A payload key `host` of the event itself is kept as `event_host` (the forwarding host's
// name is the one a collector query means; an emitter cannot pose as another host). What the
// host record had already lost stays lost: a payload key shadowed by a header name, the
// difference between a NULL and an empty payload, and the `payload` key of a payload that was
// not a map (it arrives as one key, `payload`, and is kept as such).
//
// The row's accounting is what makes de-duplication and the per-(boot, cpu) audit work
// centrally: a KMES event accounts its own sequence, a synthetic.gap its range (from its
// first_sequence/last_sequence), other synthetic records nothing (see shard_writer.hpp).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "eventd/ingest/handoff.hpp"

namespace eventd::collector {

// The records of one message body eventd-forward published (docs/FORWARD.md "Packed
// messages"): a msgpack array of records, or one record (a map) — MaxRecordsPerMessage 1 and
// forwarders before packing. Each span is one element's bytes, not yet checked (item_from_record
// does that). EINVAL for anything else: an empty array, bytes after it, an element cut short.
base::Result<std::vector<std::span<const uint8_t>>> records_of_message(std::span<const uint8_t> body);

// Every record of one message body as a row, in order — what records_of_message and
// item_from_record give record by record, read in one pass over the body (the collector's
// path). EINVAL, naming the record ("record 3 of 760: …"), when any is not an eventd record.
base::Result<std::vector<HandoffItem>> items_of_message(std::span<const uint8_t> body, std::string_view host);

// EINVAL (naming what is wrong) when `record` is not one msgpack map with boot_id (a GUID
// string), timestamp (an integer) and event_type (a string) and header fields of their types.
base::Result<HandoffItem> item_from_record(std::span<const uint8_t> record, std::string_view host);

}  // namespace eventd::collector
