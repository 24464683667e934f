#include "nats/client.hpp"

#include <cerrno>
#include <cstring>

namespace eventd::nats {

base::Error nats_error(const std::string& what, natsStatus s) {
    const char* last = nats_GetLastError(nullptr);
    std::string text = what + ": " + natsStatus_GetText(s);
    // nats.c's own text often repeats the status ("(conn.c:2088): No server available…").
    if (last && *last && !std::strstr(last, natsStatus_GetText(s))) text += " (" + std::string(last) + ")";
    return base::Error{EIO, text};
}

base::Status apply_auth(natsOptions* options, const ClientAuth& auth) {
    natsStatus s = NATS_OK;
    if (!auth.credentials_file.empty()) {
        s = natsOptions_SetUserCredentialsFromFiles(options, auth.credentials_file.c_str(), nullptr);
        if (s != NATS_OK) return nats_error("CredentialsFile " + auth.credentials_file, s);
    }
    if (!auth.nkey.empty()) {
        s = natsOptions_SetNKeyFromSeed(options, auth.nkey.c_str(), auth.nkey_seed_file.c_str());
        if (s != NATS_OK) return nats_error("NKeySeedFile " + auth.nkey_seed_file, s);
    }
    if (!auth.tls_ca_file.empty() || !auth.tls_cert_file.empty()) {
        s = natsOptions_SetSecure(options, true);
        if (s == NATS_OK && !auth.tls_ca_file.empty())
            s = natsOptions_LoadCATrustedCertificates(options, auth.tls_ca_file.c_str());
        if (s == NATS_OK && !auth.tls_cert_file.empty())
            s = natsOptions_LoadCertificatesChain(options, auth.tls_cert_file.c_str(), auth.tls_key_file.c_str());
        if (s != NATS_OK) return nats_error("TLS setup", s);
    }
    return {};
}

}  // namespace eventd::nats
