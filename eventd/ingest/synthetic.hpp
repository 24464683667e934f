// Synthetic records eventd writes itself (PSD-008 §2.6; payload keys fixed by the issue and
// documented in docs/STORE.md). Each builder returns a complete EventRow: timestamp = now,
// type synthetic.*, msgpack map payload, and NULL sequence/origin/identity columns.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/event_row.hpp"

namespace eventd::synthetic {

using kmes::Guid;
using store::EventRow;

uint64_t now_ns();

struct CpuSequence {
    uint16_t cpu_id;
    uint64_t sequence;
};

EventRow startup(const Guid& boot_id, const std::string& os_boot_id, bool restart, uint32_t shard_count,
                 const std::vector<CpuSequence>& resume_points);
EventRow shutdown(const Guid& boot_id, const std::vector<CpuSequence>& last_sequences);
EventRow gap(const Guid& boot_id, uint16_t cpu_id, uint64_t first, uint64_t last,
             std::optional<uint64_t> last_seen_timestamp, uint64_t revealing_timestamp);
EventRow storage_error(const Guid& boot_id, uint32_t shard_index, const std::string& error);
EventRow config_change(const Guid& boot_id, const std::string& key, const nlohmann::json& old_value,
                       const nlohmann::json& new_value);

}  // namespace eventd::synthetic
