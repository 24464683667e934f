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
// A JetStream message the collector cannot store (issue 40): terminated, never delivered again,
// and kept as this record instead (docs/STORE.md "synthetic.collector_rejected"). Its timestamp
// is when the stream stored the message, so every delivery of it makes the same record and the
// duplicate check stores it once.
struct RejectedMessage {
    std::string host;     // its Eventd-Host header as received (empty when it had none): claimed_host
    std::string subject;
    std::string stream;
    uint64_t stream_sequence = 0;
    uint64_t stored_at_ns = 0;  // 0: unknown, the record is stamped now
    uint64_t size = 0;          // the body's bytes
    std::string reason;
    std::vector<uint8_t> head;  // the body's first bytes (kRejectedHeadBytes at most)
};
constexpr size_t kRejectedHeadBytes = 64;
constexpr char kCollectorRejectedType[] = "synthetic.collector_rejected";
EventRow collector_rejected(const Guid& run_id, const RejectedMessage& message);
EventRow config_change(const Guid& boot_id, const std::string& key, const nlohmann::json& old_value,
                       const nlohmann::json& new_value);

}  // namespace eventd::synthetic
