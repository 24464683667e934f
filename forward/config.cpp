#include "forward/config.hpp"

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <climits>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>

#include "nats/names.hpp"
#include "nats/server_list.hpp"

namespace eventd::forward {
namespace {

using json = nlohmann::json;

base::Error bad(const std::string& key, const std::string& what) {
    return base::Error{EINVAL, "eventd-forward configuration: " + key + " " + what};
}

base::Status read_string(const json& doc, const std::string& key, std::string& out, bool path) {
    const json& v = doc.at(key);
    if (!v.is_string() || v.get<std::string>().empty())
        return bad(key, std::string("must be a non-empty ") + (path ? "path " : "") + "string, got " + v.dump());
    out = v.get<std::string>();
    return {};
}

base::Status read_u32(const json& doc, const std::string& key, uint32_t& out, uint32_t min, uint32_t max) {
    const json& v = doc.at(key);
    if (!v.is_number_unsigned() || v.get<uint64_t>() < min || v.get<uint64_t>() > max)
        return bad(key, "must be an integer from " + std::to_string(min) + " to " + std::to_string(max) + ", got " +
                            v.dump());
    out = static_cast<uint32_t>(v.get<uint64_t>());
    return {};
}


std::string machine_host_name() {
    char name[HOST_NAME_MAX + 1] = {};
    if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
    return name;
}

}  // namespace

base::Result<LoadedForwardConfig> parse_forward_config(const json& doc) {
    if (!doc.is_object()) return base::Error{EINVAL, "eventd-forward configuration: must be a JSON object"};
    LoadedForwardConfig loaded;
    ForwardConfig& c = loaded.config;
    using Reader = std::function<base::Status()>;
    const std::map<std::string, Reader> keys = {
        {"EventdSocketPath", [&] { return read_string(doc, "EventdSocketPath", c.eventd_socket_path, true); }},
        {"NatsUrl", [&] { return read_string(doc, "NatsUrl", c.nats_url, false); }},
        {"Stream", [&] { return read_string(doc, "Stream", c.stream, false); }},
        {"SubjectPrefix", [&] { return read_string(doc, "SubjectPrefix", c.subject_prefix, false); }},
        {"StateDirectory", [&] { return read_string(doc, "StateDirectory", c.state_directory, true); }},
        {"Query", [&] { return read_string(doc, "Query", c.query, false); }},
        {"HostName", [&] { return read_string(doc, "HostName", c.host_name, false); }},
        {"CredentialsFile", [&] { return read_string(doc, "CredentialsFile", c.auth.credentials_file, true); }},
        {"NKey", [&] { return read_string(doc, "NKey", c.auth.nkey, false); }},
        {"NKeySeedFile", [&] { return read_string(doc, "NKeySeedFile", c.auth.nkey_seed_file, true); }},
        {"TlsCaFile", [&] { return read_string(doc, "TlsCaFile", c.auth.tls_ca_file, true); }},
        {"TlsCertFile", [&] { return read_string(doc, "TlsCertFile", c.auth.tls_cert_file, true); }},
        {"TlsKeyFile", [&] { return read_string(doc, "TlsKeyFile", c.auth.tls_key_file, true); }},
        {"MaxPendingAcks", [&] { return read_u32(doc, "MaxPendingAcks", c.max_pending_acks, 1, 1u << 20); }},
        {"MaxRecordsPerMessage",
         [&] { return read_u32(doc, "MaxRecordsPerMessage", c.max_records_per_message, 1, 100000); }},
        {"MaxMessageBytes", [&] { return read_u32(doc, "MaxMessageBytes", c.max_message_bytes, 1024, 64u << 20); }},
        {"MaxMessageDelayMs", [&] { return read_u32(doc, "MaxMessageDelayMs", c.max_message_delay_ms, 0, 60000); }},
        {"AckTimeoutMs", [&] { return read_u32(doc, "AckTimeoutMs", c.ack_timeout_ms, 100, 600000); }},
        {"DuplicateWindowSeconds",
         [&] { return read_u32(doc, "DuplicateWindowSeconds", c.duplicate_window_seconds, 1, 7 * 86400); }},
        {"MaxBackoffMs", [&] { return read_u32(doc, "MaxBackoffMs", c.max_backoff_ms, 10, 600000); }},
        {"Replicas", [&] { return read_u32(doc, "Replicas", c.replicas, 1, 5); }},
    };
    for (auto it = doc.begin(); it != doc.end(); ++it) {
        const auto known = keys.find(it.key());
        if (known == keys.end()) {
            loaded.warnings.push_back("unknown key " + it.key() + " ignored");
            continue;
        }
        if (auto st = known->second(); !st) return st.error();
    }
    if (c.nats_url.empty()) return bad("NatsUrl", "is required (e.g. \"nats://127.0.0.1:4222\")");
    if (auto urls = nats::server_urls(c.nats_url); !urls) return bad("NatsUrl", urls.error().message);
    if (!nats::valid_name(c.stream)) return bad("Stream", "must not contain '.', '*', '>', '/', '\\' or spaces");
    if (!nats::valid_subject_prefix(c.subject_prefix))
        return bad("SubjectPrefix", "must be dot-separated tokens without '*', '>' or spaces");
    if (c.host_name.empty()) c.host_name = machine_host_name();
    if (const auto problem = nats::auth_problem(c.auth)) return bad(problem->first, problem->second);
    return loaded;
}

namespace {

// Where the STREAM keyword is (outside string literals, any case), if anywhere.
std::optional<size_t> stream_keyword(const std::string& query) {
    std::string word;
    bool in_string = false, escaped = false;
    auto is_stream = [&] {
        if (word.size() != 6) return false;
        for (size_t i = 0; i < 6; ++i)
            if (std::toupper(static_cast<unsigned char>(word[i])) != "STREAM"[i]) return false;
        return true;
    };
    const std::string text = query + " ";
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (escaped) escaped = false;
            else if (c == '\\') escaped = true;
            else if (c == '"') in_string = false;
            continue;
        }
        if (c == '"') {
            in_string = true;
            word.clear();
        } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
            word.push_back(c);
        } else {
            if (is_stream()) return i - word.size();
            word.clear();
        }
    }
    return std::nullopt;
}

}  // namespace

std::string streaming_query(const std::string& query) {
    return stream_keyword(query) ? query : query + " STREAM";
}

std::string counting_query(const std::string& query) {
    std::string q = query;
    if (const auto at = stream_keyword(q)) q.erase(*at, 6);
    return q + " COUNT";
}

base::Result<LoadedForwardConfig> load_forward_config(const std::string& path) {
    std::ifstream in(path);
    if (!in) return base::errno_error("cannot read the configuration " + path);
    std::stringstream text;
    text << in.rdbuf();
    json doc;
    try {
        doc = json::parse(text.str());
    } catch (const json::parse_error& e) {
        return base::Error{EINVAL, "configuration " + path + " is not valid JSON: " + e.what()};
    }
    auto loaded = parse_forward_config(doc);
    if (!loaded) return base::Error{loaded.error().code, loaded.error().message + " (" + path + ")"};
    return loaded;
}

}  // namespace eventd::forward
