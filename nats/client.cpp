#include "nats/client.hpp"

#include <cerrno>
#include <cstring>
#include <vector>

#include "nats/server_list.hpp"

namespace eventd::nats {

base::Error nats_error(const std::string& what, natsStatus s) {
    const char* last = nats_GetLastError(nullptr);
    std::string text = what + ": " + natsStatus_GetText(s);
    // nats.c's own text often repeats the status ("(conn.c:2088): No server available…").
    if (last && *last && !std::strstr(last, natsStatus_GetText(s))) text += " (" + std::string(last) + ")";
    return base::Error{EIO, text};
}

base::Status apply_servers(natsOptions* options, const std::string& url_list) {
    auto urls = server_urls(url_list);
    if (!urls) return base::Error{urls.error().code, "NatsUrl " + urls.error().message};
    std::vector<const char*> servers;
    for (const std::string& url : *urls) servers.push_back(url.c_str());
    const natsStatus s = natsOptions_SetServers(options, servers.data(), static_cast<int>(servers.size()));
    if (s != NATS_OK) return nats_error("NatsUrl " + url_list, s);
    return {};
}

std::string connected_url(natsConnection* connection) {
    char url[512] = {};
    if (natsConnection_GetConnectedUrl(connection, url, sizeof url) != NATS_OK || url[0] == '\0') return "NATS";
    return url;
}

base::Status set_session_options(natsOptions* options, const std::string& name, int64_t timeout_ms,
                                 const std::string& url_list, const ClientAuth& auth) {
    natsStatus s = natsOptions_SetName(options, name.c_str());
    if (s == NATS_OK) s = natsOptions_SetTimeout(options, timeout_ms);
    if (s == NATS_OK) s = natsOptions_SetAllowReconnect(options, false);
    if (s != NATS_OK) return nats_error("cannot set up the NATS options", s);
    if (auto st = apply_servers(options, url_list); !st) return st;
    return apply_auth(options, auth);
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
