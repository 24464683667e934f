// eventd configuration: /etc/eventd/eventd.json, the Linux stand-in for the registry subtree
// Machine\System\eventd\ (DESIGN.md §2, PSD-008 §12.1). Reference: docs/CONFIGURATION.md.
//
// Required keys (EventStorePath, QuerySocketPath) missing or invalid → eventd refuses to start,
// naming the key; so does an invalid CollectorSource (collector/source_config.hpp). Optional keys: an invalid value keeps the compiled-in default at startup, the
// value in force at runtime (DESIGN.md §8); either way it is logged. Unknown keys are ignored.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.hpp"
#include "eventd/collector/source_config.hpp"

namespace eventd {

struct EventdConfig {
    // Required; restart to change.
    std::string event_store_path;
    std::string query_socket_path;
    // Optional; restart to change.
    std::string kmes_socket_path = "/run/kmes/kmes.sock";
    uint32_t storage_shards = 0;  // 0 = CPU count
    // Collector mode (docs/FORWARD.md "Collector"): set = records from JetStream, no KMES rings.
    std::optional<collector::SourceConfig> collector;
    // Tuning; applied at once on reload (§12.1), each change recorded as synthetic.config_change.
    uint32_t max_batch_size = 10000;
    uint32_t max_batch_latency_ms = 100;
    // Group commit: an idle writer's batch waits this long after its first event for more
    // (0: commit at once, §2.4.2 step 3). Never beyond max_batch_latency_ms.
    uint32_t commit_delay_ms = 0;
    // Issue 28: a signed checkpoint per shard this often, idle or not (sealed stores only).
    uint32_t checkpoint_interval_seconds = 60;
    uint32_t event_retention_days = 30;
    uint64_t event_retention_max_bytes = 0;  // 0 = no limit
    uint32_t retention_check_interval_minutes = 60;
    // Adaptive indexing policy (§3.3.8): eventd/index/policy.hpp. drop < create always holds:
    // a file where it does not keeps the pair in force (a problem is reported).
    uint32_t adaptive_index_window_hours = 24;
    uint32_t adaptive_index_policy_interval_minutes = 60;
    uint32_t adaptive_index_create_threshold = 100;
    uint32_t adaptive_index_drop_threshold = 10;
    // Index shedding under write pressure (§3.3.4); used by the shard writers and drain threads.
    uint32_t shedding_window_seconds = 30;
    uint32_t shedding_batch_percent = 75;
    uint32_t emergency_shedding_buffer_percent = 75;
    // Query server (§8.6.7–§8.8, §12.1). Limits apply to new connections at once.
    uint32_t query_timeout_ms = 30000;
    uint32_t max_concurrent_queries = 128;
    uint32_t max_streaming_queries = 64;
    uint32_t max_queries_per_user = 16;  // ours: per uid, root exempt
    uint32_t max_streaming_queries_per_user = 8;  // ours: streams per uid, root exempt
    uint32_t admin_reserved_queries = 4;  // ours: connection and stream slots only administrators take
    // ours (issue 41): Sigma rules evaluated on the audit events (docs/DETECTION.md); a missing
    // directory holds none. Not in collector mode.
    std::string detection_rules_path = "/etc/eventd/rules.d";
    uint32_t user_query_nice = 19;        // ours (issue 40): the CPU priority of a non-administrator's query
    uint32_t max_running_queries_per_user = 2;  // ours (issue 40): a non-administrator's queries reading at once
    uint64_t max_query_group_bytes = 67108864;  // ours (issue 40): one aggregate query's groups (64 MiB)
    uint32_t max_query_message_bytes = 65536;
    uint32_t query_response_target_bytes = 65536;  // ours: records per "ok" frame ≈ this size
    // Access policy (DESIGN.md §2, PSD-008 §9): the `Security` object as written, parsed by
    // eventd/access/policy.hpp. Absent: root and group adm read everything.
    nlohmann::json security;
};

struct ConfigProblem {
    std::string key;
    std::string message;  // what was wrong and what is used instead
};

struct LoadedConfig {
    EventdConfig config;
    std::vector<ConfigProblem> problems;  // invalid optional values (logged, not fatal)
    std::set<std::string> present;        // keys the file sets (absent ones hold their default)
};

// Read and validate `path`. An absent optional key takes its compiled-in default; an invalid
// one keeps its value in `in_force` (the defaults at startup, DESIGN.md §8).
base::Result<LoadedConfig> load_eventd_config(const std::string& path, const EventdConfig& in_force = {});
base::Result<LoadedConfig> parse_eventd_config(const nlohmann::json& document, const EventdConfig& in_force = {});

// A runtime change of one tuning key (for synthetic.config_change).
struct ConfigChange {
    std::string key;
    nlohmann::json old_value;  // null when the key was absent from the file
    nlohmann::json new_value;  // null when the key was removed (its default applies)
};
// Tuning keys whose value or presence differs between `from` and `to`. Restart-only keys
// that changed are reported in *restart_only (logged; they apply at the next start).
std::vector<ConfigChange> tuning_changes(const LoadedConfig& from, const LoadedConfig& to,
                                         std::vector<std::string>* restart_only);

}  // namespace eventd
