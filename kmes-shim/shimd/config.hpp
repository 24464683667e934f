// kmes-shimd configuration: /etc/kmes/kmes.json, the Linux stand-in for the registry subtree
// Machine\System\KMES\ (DESIGN.md §2, PSD-003 §6.1). Reference: docs/CONFIGURATION.md.
//
// Rule for every key (§6.1.2): a valid value is applied; an invalid one (wrong type, out of
// range, not a power of two, unknown group) is ignored, the previous value kept, and a
// Rejection is reported so the daemon can write a `kmes.config_rejected` self-event.
// Unknown keys are ignored. An unreadable or malformed file changes nothing.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "audit/audit_source.hpp"
#include "kmes/kmes.h"

namespace kmes::shim {

// A built-in kernel emitter (DESIGN.md §2 "built-in kernel emitters"): one thread per CPU
// writing through the ring write path with no socket.
struct GeneratorSpec {
    uint64_t rate = 1000;        // events per second per CPU; 0 = as fast as possible
    uint32_t payload_size = 64;  // bytes of msgpack payload (a bin value)
    uint8_t origin_class = KMES_ORIGIN_KACS;
    uint64_t count = 0;          // events per CPU, then the CPU's thread stops; 0 = no end
    std::map<std::string, uint32_t> types{{"demo.event", 1}};  // type → weight
    bool operator==(const GeneratorSpec&) const = default;
};

struct ShimConfig {
    // PSD-003 §6.1 registry keys.
    uint64_t buffer_capacity = KMES_DEFAULT_BUFFER_CAPACITY;
    uint32_t max_event_size = 65536;
    uint32_t max_nesting_depth = 32;
    uint32_t max_emit_rate = 10000;
    // Linux keys. Cpus, SocketPath, Mlock, Hugepages and ConfigDelayMs act at start only.
    uint32_t cpus = 0;  // 0: the online CPUs
    std::string socket_path = KMES_DEFAULT_SOCKET;
    std::optional<gid_t> attach_group;  // besides root; unset: root only
    std::optional<gid_t> emit_group;
    uint32_t config_delay_ms = 0;
    // Issue 40, fair sockets (docs/CONFIGURATION.md): connections one uid may hold (root and
    // AttachGroup members exempt), and how long a new connection may take to send its first
    // request (and any request to send its rest). Both apply at once on a reload.
    uint32_t max_connections_per_user = 64;
    uint32_t request_timeout_ms = 10000;
    bool mlock = false;
    bool hugepages = false;
    std::vector<GeneratorSpec> generators;
    // The audit source (docs/AUDIT.md): "Audit": {"Mode", "RulesFile", "BacklogLimit",
    // "BacklogWaitTimeMs", "ReceiveBufferBytes", "EventTimeoutMs"}. A change restarts it.
    audit::AuditSettings audit;
};

struct Rejection {
    std::string key;
    nlohmann::json rejected;
    nlohmann::json retained;
};

struct ConfigLoad {
    ShimConfig config;                      // `current` with every valid value applied
    std::vector<Rejection> rejections;      // one per invalid value
    std::optional<std::string> file_error;  // unreadable or malformed: nothing applied
};

// Read `path` and apply it over `current`.
ConfigLoad load_config(const std::string& path, const ShimConfig& current);
// Apply an already parsed document over `current` (also used for tests).
ConfigLoad apply_config(const nlohmann::json& document, const ShimConfig& current);

// Parse a `--generate` argument: "rate=N,payload=BYTES,origin=N,types=a:3+b:1".
std::optional<GeneratorSpec> parse_generator_flag(const std::string& text, std::string* error);

}  // namespace kmes::shim
