// NATS authentication and TLS settings, shared by eventd-forward (docs/FORWARD.md
// "Configuration") and eventd's collector mode (docs/FORWARD.md "Collector"): the same keys,
// checked the same way, applied to a connection by nats/client.hpp. No nats.c types here, so
// configuration code can hold them without the client library's header.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace eventd::nats {

struct ClientAuth {
    std::string credentials_file;  // CredentialsFile: a .creds file (JWT + NKey seed)
    std::string nkey;              // NKey: a user NKey (U…), with nkey_seed_file
    std::string nkey_seed_file;    // NKeySeedFile: the file holding its seed (SU…)
    std::string tls_ca_file;       // TlsCaFile: trust these CAs (implies TLS)
    std::string tls_cert_file;     // TlsCertFile: client certificate (with tls_key_file)
    std::string tls_key_file;      // TlsKeyFile
    bool operator==(const ClientAuth&) const = default;
};

// The first combination of keys that cannot work together, as (key, what is wrong); nullopt
// when the settings are consistent.
inline std::optional<std::pair<std::string, std::string>> auth_problem(const ClientAuth& a) {
    if (a.tls_cert_file.empty() != a.tls_key_file.empty())
        return std::pair{std::string(a.tls_cert_file.empty() ? "TlsCertFile" : "TlsKeyFile"),
                         std::string("is needed with the other one")};
    if (a.nkey.empty() != a.nkey_seed_file.empty())
        return std::pair{std::string(a.nkey.empty() ? "NKey" : "NKeySeedFile"),
                         std::string("is needed with the other one")};
    if (!a.credentials_file.empty() && !a.nkey_seed_file.empty())
        return std::pair{std::string("NKeySeedFile"),
                         std::string("cannot be combined with CredentialsFile (the .creds file holds the seed)")};
    return std::nullopt;
}

}  // namespace eventd::nats
