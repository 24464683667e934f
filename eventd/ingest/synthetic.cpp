#include "eventd/ingest/synthetic.hpp"

#include "base/display_escape.hpp"
#include "base/guid_text.hpp"
#include "base/hex.hpp"
#include "base/utf8.hpp"

#include <ctime>

#include "kmes/guid.hpp"

namespace eventd::synthetic {
namespace {

using nlohmann::json;

EventRow make(const Guid& boot_id, std::string type, const json& payload) {
    EventRow row;
    row.boot_id = boot_id;
    row.timestamp = now_ns();
    row.event_type = std::move(type);
    row.payload = json::to_msgpack(payload);
    return row;
}

json cpu_sequences(const std::vector<CpuSequence>& list) {
    json out = json::array();
    for (const auto& cs : list) out.push_back({{"cpu_id", cs.cpu_id}, {"sequence", cs.sequence}});
    return out;
}

// Values as decimal/plain strings, with their JSON type name; "absent" + nil for a key that
// was added or removed (issue 3, synthetic.config_change).
std::pair<json, std::string> typed(const json& v) {
    if (v.is_null()) return {nullptr, "absent"};
    if (v.is_string()) return {v.get<std::string>(), "string"};
    if (v.is_boolean()) return {v.get<bool>() ? "true" : "false", "bool"};
    if (v.is_number_integer()) return {v.dump(), "integer"};
    if (v.is_number()) return {v.dump(), "number"};
    return {v.dump(), v.type_name()};
}

// Text a remote publisher chose (a header, a subject): exact when it is valid UTF-8, escaped
// otherwise (a msgpack str holds UTF-8), and at most `max` bytes, cut on a character boundary
// with "…" — the record stays small whatever was sent.
std::string received_text(std::string_view text, size_t max) {
    std::string out = base::is_valid_utf8(text) ? std::string(text) : base::display_escaped(text);
    if (out.size() <= max) return out;
    size_t cut = max;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xc0) == 0x80) --cut;
    out.resize(cut);
    return out + "…";
}

}  // namespace

uint64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
}

EventRow startup(const Guid& boot_id, const std::string& os_boot_id, bool restart, uint32_t shard_count,
                 const std::vector<CpuSequence>& resume_points) {
    return make(boot_id, "synthetic.startup",
                {{"boot_id", base::guid_text(boot_id)},
                 {"os_boot_id", os_boot_id},
                 {"restart", restart},
                 {"shard_count", shard_count},
                 {"resume_points", cpu_sequences(resume_points)}});
}

EventRow shutdown(const Guid& boot_id, const std::vector<CpuSequence>& last_sequences) {
    return make(boot_id, "synthetic.shutdown", {{"last_sequences", cpu_sequences(last_sequences)}});
}

EventRow gap(const Guid& boot_id, uint16_t cpu_id, uint64_t first, uint64_t last,
             std::optional<uint64_t> last_seen_timestamp, uint64_t revealing_timestamp) {
    EventRow row = make(boot_id, "synthetic.gap",
                        {{"cpu_id", cpu_id},
                         {"first_sequence", first},
                         {"last_sequence", last},
                         {"count", last - first + 1},
                         {"last_seen_timestamp", last_seen_timestamp ? json(*last_seen_timestamp) : json(nullptr)},
                         {"revealing_timestamp", revealing_timestamp}});
    row.cpu_id = cpu_id;  // §2.5.4: gap rows carry the CPU where the gap was detected
    return row;
}

EventRow storage_error(const Guid& boot_id, uint32_t shard_index, const std::string& error) {
    return make(boot_id, "synthetic.storage_error",
                {{"store", "event"}, {"shard_index", shard_index}, {"error", error}});
}

EventRow collector_rejected(const Guid& run_id, const RejectedMessage& m) {
    constexpr size_t kMaxText = 256;  // a host name or subject; a reason names both
    EventRow row = make(run_id, kCollectorRejectedType,
                        {{"claimed_host", received_text(m.host, kMaxText)},
                         {"subject", received_text(m.subject, kMaxText)},
                         {"stream", m.stream},
                         {"stream_sequence", m.stream_sequence},
                         {"size", m.size},
                         {"reason", received_text(m.reason, 4 * kMaxText)},
                         {"head", base::hex_text(std::span(m.head.data(), std::min(m.head.size(), kRejectedHeadBytes)))}});
    if (m.stored_at_ns) row.timestamp = m.stored_at_ns;
    return row;
}

EventRow config_change(const Guid& boot_id, const std::string& key, const json& old_value, const json& new_value) {
    auto [old_text, old_type] = typed(old_value);
    auto [new_text, new_type] = typed(new_value);
    return make(boot_id, "synthetic.config_change",
                {{"key", key},
                 {"old_value", old_text},
                 {"old_value_type", old_type},
                 {"new_value", new_text},
                 {"new_value_type", new_type}});
}

}  // namespace eventd::synthetic
