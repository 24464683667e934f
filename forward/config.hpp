// eventd-forward's configuration (issue 12 part 2; docs/FORWARD.md "Configuration"): a JSON
// object, /etc/eventd/eventd-forward.json when installed. Every value is checked at startup and a
// wrong one refuses the start, naming the key (a forwarder that starts on a guess could publish
// to the wrong place); unknown keys are reported as warnings (a typo of an optional key would
// otherwise be silent).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.hpp"
#include "nats/client_auth.hpp"

namespace eventd::forward {

struct ForwardConfig {
    std::string eventd_socket_path = "/run/eventd/query.sock";
    std::string nats_url;  // required, e.g. nats://127.0.0.1:4222, or a cluster's: comma-separated
    std::string stream = "EVENTD";
    std::string subject_prefix = "eventd";
    std::string state_directory = "/var/lib/eventd-forward";
    std::string query = "EVENTS";  // STREAM is added; SINCE/UNTIL/SORT/SKIP/TAKE/aggregates/SELECT refused
    std::string host_name;         // default: the machine's hostname
    nats::ClientAuth auth;  // NATS authentication and TLS (all optional)
    // Packing (packer.hpp; docs/FORWARD.md "Packed messages"): a message closes at whichever
    // limit comes first. Defaults measured with ./scripts/bench fleet (docs/PERFORMANCE.md §12).
    uint32_t max_records_per_message = 1000;  // 1: one record per message, the record itself as the body
    uint32_t max_message_bytes = 262144;      // kept below the server's max_payload
    uint32_t max_message_delay_ms = 5;        // the latency packing may add
    // Publishing.
    uint32_t max_pending_acks = 4096;        // messages published, not yet acknowledged
    uint32_t ack_timeout_ms = 30000;         // no ack progress this long: reconnect
    uint32_t duplicate_window_seconds = 3600;  // for a stream it creates; warned about when shorter
    uint32_t max_backoff_ms = 30000;         // reconnect backoff cap (with jitter)
    uint32_t replicas = 1;                   // of a stream it creates (a cluster's); warned about when different
};

struct LoadedForwardConfig {
    ForwardConfig config;
    std::vector<std::string> warnings;  // unknown keys
};

// Parse and check a configuration document. EINVAL naming the key for anything wrong.
base::Result<LoadedForwardConfig> parse_forward_config(const nlohmann::json& document);

// `query` with STREAM added unless it has one already (a keyword outside string literals,
// any case): the forwarder always follows.
std::string streaming_query(const std::string& query);

// `query` without its STREAM and with COUNT: how many of its records follow a cursor (the lag
// probe's question).
std::string counting_query(const std::string& query);

// Read FILE and parse it. Errors name the file.
base::Result<LoadedForwardConfig> load_forward_config(const std::string& path);

}  // namespace eventd::forward
