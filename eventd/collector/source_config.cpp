#include "eventd/collector/source_config.hpp"

#include <cerrno>
#include <functional>
#include <map>

#include "nats/names.hpp"
#include "nats/server_list.hpp"

namespace eventd::collector {
namespace {

using json = nlohmann::json;

base::Error bad(const std::string& key, const std::string& what) {
    return base::Error{EINVAL, "configuration key CollectorSource." + key + " " + what};
}

base::Status read_string(const json& v, const std::string& key, std::string& out) {
    if (!v.is_string() || v.get<std::string>().empty()) return bad(key, "must be a non-empty string, got " + v.dump());
    out = v.get<std::string>();
    return {};
}

base::Status read_u32(const json& v, const std::string& key, uint32_t& out, uint32_t min, uint32_t max) {
    // (A non-negative integer written in C++ is signed in nlohmann::json; from text, unsigned.)
    const bool count = v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
    if (!count || v.get<uint64_t>() < min || v.get<uint64_t>() > max)
        return bad(key, "must be an integer from " + std::to_string(min) + " to " + std::to_string(max) + ", got " +
                            v.dump());
    out = static_cast<uint32_t>(v.get<uint64_t>());
    return {};
}

}  // namespace

base::Result<SourceConfig> parse_source_config(const json& v) {
    if (!v.is_object())
        return base::Error{EINVAL, "configuration key CollectorSource must be an object like {\"NatsUrl\": "
                                   "\"nats://127.0.0.1:4222\"}, got " + v.dump()};
    SourceConfig c;
    using Read = std::function<base::Status(const json&)>;
    const std::map<std::string, Read> keys = {
        {"NatsUrl", [&](const json& x) { return read_string(x, "NatsUrl", c.nats_url); }},
        {"Stream", [&](const json& x) { return read_string(x, "Stream", c.stream); }},
        {"Durable", [&](const json& x) { return read_string(x, "Durable", c.durable); }},
        {"FilterSubject", [&](const json& x) { return read_string(x, "FilterSubject", c.filter_subject); }},
        {"SubjectPrefix", [&](const json& x) { return read_string(x, "SubjectPrefix", c.subject_prefix); }},
        {"AckWaitSeconds", [&](const json& x) { return read_u32(x, "AckWaitSeconds", c.ack_wait_seconds, 1, 3600); }},
        {"MaxAckPending",
         [&](const json& x) { return read_u32(x, "MaxAckPending", c.max_ack_pending, 100, 1u << 20); }},
        {"FetchBatch", [&](const json& x) { return read_u32(x, "FetchBatch", c.fetch_batch, 1, 10000); }},
        {"MaxBackoffMs", [&](const json& x) { return read_u32(x, "MaxBackoffMs", c.max_backoff_ms, 10, 600000); }},
        {"CredentialsFile", [&](const json& x) { return read_string(x, "CredentialsFile", c.auth.credentials_file); }},
        {"NKey", [&](const json& x) { return read_string(x, "NKey", c.auth.nkey); }},
        {"NKeySeedFile", [&](const json& x) { return read_string(x, "NKeySeedFile", c.auth.nkey_seed_file); }},
        {"TlsCaFile", [&](const json& x) { return read_string(x, "TlsCaFile", c.auth.tls_ca_file); }},
        {"TlsCertFile", [&](const json& x) { return read_string(x, "TlsCertFile", c.auth.tls_cert_file); }},
        {"TlsKeyFile", [&](const json& x) { return read_string(x, "TlsKeyFile", c.auth.tls_key_file); }},
    };
    for (auto it = v.begin(); it != v.end(); ++it) {
        const auto known = keys.find(it.key());
        if (known == keys.end()) return bad(it.key(), "is not a known key");
        if (auto st = known->second(it.value()); !st) return st.error();
    }
    if (c.nats_url.empty()) return bad("NatsUrl", "is required (e.g. \"nats://127.0.0.1:4222\")");
    if (auto urls = nats::server_urls(c.nats_url); !urls) return bad("NatsUrl", urls.error().message);
    if (!nats::valid_name(c.stream)) return bad("Stream", "must not contain '.', '*', '>', '/', '\\' or spaces");
    if (!nats::valid_name(c.durable)) return bad("Durable", "must not contain '.', '*', '>', '/', '\\' or spaces");
    if (!nats::valid_subject_prefix(c.subject_prefix))
        return bad("SubjectPrefix", "must be dot-separated tokens without '*', '>' or spaces");
    if (c.max_ack_pending < c.fetch_batch)
        return bad("MaxAckPending", "must be at least FetchBatch (" + std::to_string(c.fetch_batch) + ")");
    if (const auto problem = nats::auth_problem(c.auth)) return bad(problem->first, problem->second);
    return c;
}

}  // namespace eventd::collector
