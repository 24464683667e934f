// What eventd-forward derives from one record (docs/FORWARD.md "Subjects and message ids"):
//
//   subject      <SubjectPrefix>.<host>.<event_type>   escaped as nats/subject.hpp draws it
//   Nats-Msg-Id  <boot_id>:<cpu_id>:<sequence>         KMES events: globally unique (DESIGN.md §2)
//                s:<boot_id>:<timestamp>:<hash>        synthetic records (no cpu_id/sequence):
//                                                      FNV-1a 64 of the record's bytes, which are
//                                                      the same whenever the record is read again
//
// JetStream drops a message whose Nats-Msg-Id it stored within the stream's duplicate window:
// that is what makes a replay after a crash publish nothing twice.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "base/result.hpp"
#include "nats/subject.hpp"

namespace eventd::forward {

struct RecordKeys {
    std::string event_type;
    std::string boot_id;
    std::optional<uint64_t> cpu_id;
    std::optional<uint64_t> sequence;
    int64_t timestamp = 0;
};

// The header fields of a record (a msgpack map as eventd sends it). EINVAL when event_type,
// boot_id or timestamp is missing: the forwarder's query must not SELECT them away.
base::Result<RecordKeys> record_keys(std::span<const uint8_t> record);

// The subject of a record: nats/subject.hpp (shared with the collector).
using nats::escape_token;
using nats::subject_for;

std::string message_id(const RecordKeys& keys, std::span<const uint8_t> record);

// FNV-1a 64 of `bytes` as 16 lowercase hex digits: the same on every machine and version.
std::string stable_hash(std::string_view bytes);
// `h` as 16 lowercase hex digits.
std::string hex64(uint64_t h);

}  // namespace eventd::forward
