// One row of a shard's `events` table (PSD-008 §3.1.1). KMES events carry every header
// field; synthetic rows (§2.6) leave sequence, origin_class and the identity GUIDs NULL and
// set cpu_id only for gap records.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kmes/guid.hpp"

namespace eventd::store {

// SHA-256 of a row's columns but its id: its part in the shard's hash chain (row_chain.hpp).
using RowDigest = std::array<uint8_t, 32>;

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
    // row_digest(*this), made where the row is made (a drain thread, the collector's converter)
    // so that the shard writer, the one thread every row of a shard passes, only links it into
    // the chain (docs/PERFORMANCE.md §16). Empty: the writer computes it. Set it after the last
    // column: a column changed later is stored as it is, and the store no longer verifies.
    std::optional<RowDigest> content_digest;
};

}  // namespace eventd::store
