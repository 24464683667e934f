// What eventd-forward and the collector do alike with nats.c (Debian libnats-dev): errors
// that read well, and the servers, authentication and TLS settings applied to a connection's
// options.
#pragma once

#include <nats/nats.h>

#include <string>

#include "base/result.hpp"
#include "nats/client_auth.hpp"

namespace eventd::nats {

// EIO with `what`, nats.c's status text and its last error when that adds something.
base::Error nats_error(const std::string& what, natsStatus status);

// The servers of a NatsUrl (nats/server_list.hpp) as the options' server pool: a connection
// tries them (in nats.c's random order) until one accepts. The error is the list's first bad
// element, or nats.c's.
base::Status apply_servers(natsOptions* options, const std::string& url_list);

// The URL of the server `connection` is connected to (one of a list), for messages.
std::string connected_url(natsConnection* connection);

// Credentials, NKey and TLS of `auth` on `options`; the error names the key whose file failed.
base::Status apply_auth(natsOptions* options, const ClientAuth& auth);

// What eventd-forward's and the collector's connections share: `name` for the server's
// monitoring, `timeout_ms` for the connect, no reconnection by nats.c (a failure ends the
// session, and a new one connects to any server of the list that answers), the servers of
// `url_list` and the credentials of `auth`.
base::Status set_session_options(natsOptions* options, const std::string& name, int64_t timeout_ms,
                                 const std::string& url_list, const ClientAuth& auth);

}  // namespace eventd::nats
