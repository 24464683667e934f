// The value of a NatsUrl key (eventd-forward's, and the collector's CollectorSource.NatsUrl):
// one NATS server, or the servers of a cluster separated by commas
// (`nats://a:4222,nats://b:4222`; spaces around each are ignored). Each is
// `[nats://|tls://][user[:password]@]host[:port]` — nats.c's URL form; without a scheme nats.c
// assumes nats://. Configuration code checks the value here (no nats.c types);
// nats/client.hpp hands the list to a connection's options.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"

namespace eventd::nats {

// The server URLs of `list`, in its order; EINVAL describing the first bad element (empty,
// with a space inside, a scheme other than nats or tls, no host). The message is meant to
// follow the key's name: "NatsUrl <message>".
base::Result<std::vector<std::string>> server_urls(std::string_view list);

// `list` for a message: the URL of a single server, "any of a, b, c" for several.
std::string servers_text(std::string_view list);

}  // namespace eventd::nats
