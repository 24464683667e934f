#include "config.hpp"

#include <grp.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/reserved_types.hpp"

namespace kmes::shim {
namespace {

using nlohmann::json;

bool is_power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

// A non-negative integer. The parser stores those as unsigned, but a document built in code
// (json{{"BufferCapacity", 65536}}) holds a signed integer with the same meaning.
bool is_count(const json& v) { return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0); }

// Applies one key of the document to `target` when valid, else records a Rejection.
class Applier {
public:
    Applier(const json& doc, ConfigLoad& out) : doc_(doc), out_(out) {}

    template <class T>
    void integer(const char* key, T& target, uint64_t min, uint64_t max, bool power_of_two = false) {
        if (!doc_.contains(key)) return;
        const json& v = doc_[key];
        const bool ok = is_count(v) && v.get<uint64_t>() >= min && v.get<uint64_t>() <= max &&
                        (!power_of_two || is_power_of_two(v.get<uint64_t>()));
        if (ok)
            target = static_cast<T>(v.get<uint64_t>());
        else
            reject(key, v, json(target));
    }

    void boolean(const char* key, bool& target) {
        if (!doc_.contains(key)) return;
        const json& v = doc_[key];
        if (v.is_boolean())
            target = v.get<bool>();
        else
            reject(key, v, json(target));
    }

    void socket_path(const char* key, std::string& target) {
        if (!doc_.contains(key)) return;
        const json& v = doc_[key];
        if (v.is_string() && !v.get<std::string>().empty() && v.get<std::string>().size() < 108)
            target = v.get<std::string>();
        else
            reject(key, v, json(target));
    }

    void group(const char* key, std::optional<gid_t>& target) {
        if (!doc_.contains(key)) return;
        const json& v = doc_[key];
        const json retained = target ? json(*target) : json(nullptr);
        if (v.is_null()) {
            target.reset();
        } else if (is_count(v) && v.get<uint64_t>() < 0xffffffffu) {
            target = static_cast<gid_t>(v.get<uint64_t>());
        } else if (v.is_string()) {
            const struct group* g = getgrnam(v.get<std::string>().c_str());
            if (g)
                target = g->gr_gid;
            else
                reject(key, v, retained);
        } else {
            reject(key, v, retained);
        }
    }

    void generators(const char* key, std::vector<GeneratorSpec>& target) {
        if (!doc_.contains(key)) return;
        const json& v = doc_[key];
        std::vector<GeneratorSpec> parsed;
        bool ok = v.is_array();
        for (const json& g : ok ? v : json::array()) {
            GeneratorSpec spec;
            ok = ok && g.is_object();
            if (!ok) break;
            auto number = [&](const char* k, auto& field, uint64_t max) {
                if (!g.contains(k)) return;
                if (is_count(g[k]) && g[k].get<uint64_t>() <= max)
                    field = g[k].get<uint64_t>();
                else
                    ok = false;
            };
            number("Rate", spec.rate, 100'000'000);
            number("PayloadSize", spec.payload_size, 1u << 20);
            number("OriginClass", spec.origin_class, 255);
            number("Count", spec.count, UINT64_MAX);
            if (g.contains("Types")) {
                spec.types.clear();
                const json& types = g["Types"];
                ok = ok && types.is_object() && !types.empty();
                if (ok) {
                    for (auto it = types.begin(); it != types.end(); ++it) {
                        // A generator stands in for an emitter: the product's namespaces are
                        // not its to write (base/reserved_types.hpp, issue 39).
                        ok = ok && !it.key().empty() && !base::is_reserved_type(it.key()) && is_count(it.value()) &&
                             it.value().get<uint64_t>() > 0 && it.value().get<uint64_t>() <= 1'000'000;
                        if (ok) spec.types[it.key()] = it.value().get<uint32_t>();
                    }
                }
            }
            if (ok) parsed.push_back(spec);
        }
        if (ok)
            target = std::move(parsed);
        else
            reject(key, v, json(target.size()));
    }

    // "Audit": {…}: each member checked on its own; a rejected one is named "Audit.<Member>".
    void audit(const char* key, audit::AuditSettings& target) {
        if (!doc_.contains(key)) return;
        const json& v = doc_[key];
        if (!v.is_object()) {
            reject(key, v, json(audit::mode_name(target.mode)));
            return;
        }
        const std::string prefix = std::string(key) + ".";
        if (v.contains("Mode")) {
            const json& m = v["Mode"];
            static const std::map<std::string, audit::Mode> kModes = {{"off", audit::Mode::off},
                                                                     {"multicast", audit::Mode::multicast},
                                                                     {"daemon", audit::Mode::daemon},
                                                                     {"auto", audit::Mode::automatic}};
            const auto found = m.is_string() ? kModes.find(m.get<std::string>()) : kModes.end();
            if (found != kModes.end())
                target.mode = found->second;
            else
                reject_member(prefix + "Mode", m, json(audit::mode_name(target.mode)));
        }
        if (v.contains("RulesFile")) {
            const json& r = v["RulesFile"];
            if (r.is_string())
                target.rules_file = r.get<std::string>();
            else
                reject_member(prefix + "RulesFile", r, json(target.rules_file));
        }
        auto number = [&](const char* member, uint32_t& field, uint64_t min, uint64_t max) {
            if (!v.contains(member)) return;
            const json& n = v[member];
            if (is_count(n) && n.get<uint64_t>() >= min && n.get<uint64_t>() <= max)
                field = static_cast<uint32_t>(n.get<uint64_t>());
            else
                reject_member(prefix + member, n, json(field));
        };
        number("BacklogLimit", target.backlog_limit, 64, 1u << 24);
        number("BacklogWaitTimeMs", target.backlog_wait_time_ms, 0, 600000);
        number("ReceiveBufferBytes", target.receive_buffer_bytes, 65536, 1u << 30);
        number("EventTimeoutMs", target.event_timeout_ms, 1000, 60000);
        number("ArgvMaxBytes", target.argv_max_bytes, 4096, 1u << 20);
    }

private:
    void reject_member(const std::string& key, const json& rejected, json retained) {
        out_.rejections.push_back(Rejection{key, rejected, std::move(retained)});
    }
    void reject(const char* key, const json& rejected, json retained) {
        out_.rejections.push_back(Rejection{key, rejected, std::move(retained)});
    }
    const json& doc_;
    ConfigLoad& out_;
};

}  // namespace

ConfigLoad apply_config(const json& document, const ShimConfig& current) {
    ConfigLoad out{current, {}, {}};
    if (!document.is_object()) {
        out.file_error = "the configuration must be a JSON object";
        return out;
    }
    ShimConfig& c = out.config;
    Applier a(document, out);
    // PSD-003 §6.1 keys, ranges from the table there.
    a.integer("BufferCapacity", c.buffer_capacity, KMES_MIN_BUFFER_CAPACITY, KMES_MAX_BUFFER_CAPACITY, true);
    a.integer("MaxEventSize", c.max_event_size, 1024, 4194304);
    a.integer("MaxNestingDepth", c.max_nesting_depth, 4, 256);
    a.integer("MaxEmitRatePerProcess", c.max_emit_rate, 100, 1000000);
    // Linux keys.
    a.integer("Cpus", c.cpus, 0, 4096);
    a.socket_path("SocketPath", c.socket_path);
    a.group("AttachGroup", c.attach_group);
    a.group("EmitGroup", c.emit_group);
    a.integer("ConfigDelayMs", c.config_delay_ms, 0, 600000);
    a.integer("MaxConnectionsPerUser", c.max_connections_per_user, 1, 1024);
    a.integer("RequestTimeoutMs", c.request_timeout_ms, 100, 600000);
    a.boolean("Mlock", c.mlock);
    a.boolean("Hugepages", c.hugepages);
    a.generators("Generators", c.generators);
    a.audit("Audit", c.audit);
    return out;
}

ConfigLoad load_config(const std::string& path, const ShimConfig& current) {
    std::ifstream in(path);
    if (!in) return ConfigLoad{current, {}, "cannot read " + path + ": " + std::strerror(errno)};
    json document = json::parse(in, nullptr, /*allow_exceptions=*/false, /*ignore_comments=*/true);
    if (document.is_discarded()) return ConfigLoad{current, {}, path + " is not valid JSON"};
    ConfigLoad out = apply_config(document, current);
    if (out.file_error) out.file_error = path + ": " + *out.file_error;
    return out;
}

std::optional<GeneratorSpec> parse_generator_flag(const std::string& text, std::string* error) {
    GeneratorSpec spec;
    std::istringstream fields(text);
    for (std::string field; std::getline(fields, field, ',');) {
        const auto eq = field.find('=');
        const std::string key = field.substr(0, eq);
        const std::string value = eq == std::string::npos ? "" : field.substr(eq + 1);
        try {
            // Same ranges as the Generators JSON form (Applier::generators).
            auto bounded = [&](uint64_t max) {
                if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos)
                    throw std::invalid_argument(value);
                const uint64_t v = std::stoull(value);
                if (v > max) throw std::out_of_range(value);
                return v;
            };
            if (key == "rate")
                spec.rate = bounded(100'000'000);
            else if (key == "payload")
                spec.payload_size = static_cast<uint32_t>(bounded(1u << 20));
            else if (key == "origin")
                spec.origin_class = static_cast<uint8_t>(bounded(255));
            else if (key == "count")
                spec.count = bounded(UINT64_MAX);
            else if (key == "types") {
                spec.types.clear();
                std::istringstream list(value);
                for (std::string item; std::getline(list, item, '+');) {
                    const auto colon = item.find(':');
                    const uint32_t weight = colon == std::string::npos ? 1 : std::stoul(item.substr(colon + 1));
                    const std::string type = item.substr(0, colon);
                    if (type.empty() || weight == 0 || base::is_reserved_type(type)) throw std::invalid_argument(item);
                    spec.types[type] = weight;
                }
                if (spec.types.empty()) throw std::invalid_argument(value);
            } else {
                throw std::invalid_argument(key);
            }
        } catch (const std::exception&) {
            if (error)
                *error = "bad --generate field '" + field +
                         "' (want rate=0..100000000,payload=0..1048576,origin=0..255,count=N,types=a:3+b:1; types "
                         "outside the reserved synthetic., audit., kmes., bpf., alert.)";
            return std::nullopt;
        }
    }
    return spec;
}

}  // namespace kmes::shim
