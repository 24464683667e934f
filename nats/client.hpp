// What eventd-forward and the collector do alike with nats.c (Debian libnats-dev): errors
// that read well, and the authentication and TLS settings applied to a connection's options.
#pragma once

#include <nats/nats.h>

#include <string>

#include "base/result.hpp"
#include "nats/client_auth.hpp"

namespace eventd::nats {

// EIO with `what`, nats.c's status text and its last error when that adds something.
base::Error nats_error(const std::string& what, natsStatus status);

// Credentials, NKey and TLS of `auth` on `options`; the error names the key whose file failed.
base::Status apply_auth(natsOptions* options, const ClientAuth& auth);

}  // namespace eventd::nats
