// One row of a shard's `events` table (PSD-008 §3.1.1). KMES events carry every header
// field; synthetic rows (§2.6) leave sequence, origin_class and the identity GUIDs NULL and
// set cpu_id only for gap records.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kmes/guid.hpp"

namespace eventd::store {

struct EventRow {
    kmes::Guid boot_id{};
    uint64_t timestamp = 0;  // ns since the epoch
    std::optional<uint16_t> cpu_id;
    std::optional<uint64_t> sequence;
    std::optional<uint8_t> origin_class;
    std::string event_type;
    std::optional<kmes::Guid> effective_token;
    std::optional<kmes::Guid> true_token;
    std::optional<kmes::Guid> process;
    std::optional<std::vector<uint8_t>> payload;  // NULL when absent; never re-encoded
};

}  // namespace eventd::store
