// The `CollectorSource` key of eventd's configuration (issue 12 part 3; docs/FORWARD.md
// "Collector"): its presence puts eventd in collector mode — records come from a JetStream
// durable pull consumer, not from KMES rings. A wrong value refuses the start, naming the key:
// unlike a tuning key there is no safe value to fall back to (host mode would attach to rings
// the operator did not mean; a guessed stream would ingest the wrong thing).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "base/result.hpp"
#include "nats/client_auth.hpp"

namespace eventd::collector {

struct SourceConfig {
    std::string nats_url;                   // NatsUrl (required): a server, or a cluster's, comma-separated
    std::string stream = "EVENTD";          // Stream: what eventd-forward publishes into
    std::string durable = "eventd-collector";  // Durable: the consumer's name (its position)
    std::string filter_subject;             // FilterSubject: empty = the whole stream
    std::string subject_prefix = "eventd";  // SubjectPrefix: the forwarders' (subjects are checked)
    uint32_t ack_wait_seconds = 30;         // AckWaitSeconds: unacked messages come again after this
    uint32_t max_ack_pending = 20000;       // MaxAckPending: delivered, not yet committed
    uint32_t fetch_batch = 1000;            // FetchBatch: messages asked for at once
    uint32_t max_backoff_ms = 30000;        // MaxBackoffMs: reconnect backoff cap (with jitter)
    nats::ClientAuth auth;                  // CredentialsFile, NKey, NKeySeedFile, Tls*File
    bool operator==(const SourceConfig&) const = default;
};

// EINVAL naming `CollectorSource.<Key>` for anything wrong; unknown keys are errors too (a
// typo in the one key that changes what eventd is should not pass silently).
base::Result<SourceConfig> parse_source_config(const nlohmann::json& value);

}  // namespace eventd::collector
