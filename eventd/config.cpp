#include "config.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>

namespace eventd {
namespace {

using nlohmann::json;

bool is_count(const json& v) { return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0); }

class Reader {
public:
    Reader(const json& doc, LoadedConfig& out) : doc_(doc), out_(out) {}

    // A required path: a non-empty absolute or relative string.
    kmes::Status required_path(const char* key, std::string& target) {
        if (!doc_.contains(key))
            return kmes::Error{EINVAL, std::string("required configuration key ") + key + " is missing"};
        const json& v = doc_[key];
        if (!v.is_string() || v.get<std::string>().empty())
            return kmes::Error{EINVAL, std::string("required configuration key ") + key +
                                           " must be a non-empty path string, got " + v.dump()};
        target = v.get<std::string>();
        return {};
    }

    void optional_path(const char* key, std::string& target) {
        if (!doc_.contains(key)) return;
        const json& v = doc_[key];
        if (v.is_string() && !v.get<std::string>().empty()) target = v.get<std::string>();
        else problem(key, v, json(target));
    }

    template <class T>
    void number(const char* key, T& target, uint64_t min, uint64_t max) {
        if (!doc_.contains(key)) return;
        const json& v = doc_[key];
        if (is_count(v) && v.get<uint64_t>() >= min && v.get<uint64_t>() <= max) target = static_cast<T>(v.get<uint64_t>());
        else problem(key, v, json(target), " (valid: " + std::to_string(min) + ".." + std::to_string(max) + ")");
    }

private:
    void problem(const char* key, const json& bad, const json& kept, const std::string& range = "") {
        out_.problems.push_back(ConfigProblem{key, "invalid value " + bad.dump() + range + ", using " + kept.dump()});
    }
    const json& doc_;
    LoadedConfig& out_;
};

}  // namespace

kmes::Result<LoadedConfig> parse_eventd_config(const json& document, const EventdConfig& base) {
    if (!document.is_object()) return kmes::Error{EINVAL, "the configuration must be a JSON object"};
    LoadedConfig out{base, {}};
    EventdConfig& c = out.config;
    Reader r(document, out);
    if (auto s = r.required_path("EventStorePath", c.event_store_path); !s) return s.error();
    if (auto s = r.required_path("QuerySocketPath", c.query_socket_path); !s) return s.error();
    r.optional_path("KmesSocketPath", c.kmes_socket_path);
    // PSD-008 §12.1 ranges.
    r.number("StorageShards", c.storage_shards, 0, 256);
    r.number("MaxBatchSize", c.max_batch_size, 100, 100000);
    r.number("MaxBatchLatencyMs", c.max_batch_latency_ms, 10, 5000);
    r.number("EventRetentionDays", c.event_retention_days, 1, 3650);
    r.number("EventRetentionMaxBytes", c.event_retention_max_bytes, 0, UINT64_MAX);
    r.number("RetentionCheckIntervalMinutes", c.retention_check_interval_minutes, 1, 1440);
    r.number("TestCommitDelayMs", c.test_commit_delay_ms, 0, 60000);
    return out;
}

kmes::Result<LoadedConfig> load_eventd_config(const std::string& path, const EventdConfig& base) {
    std::ifstream in(path);
    if (!in) return kmes::Error{errno, "cannot read configuration " + path + ": " + std::strerror(errno)};
    json document = json::parse(in, nullptr, /*allow_exceptions=*/false, /*ignore_comments=*/true);
    if (document.is_discarded()) return kmes::Error{EINVAL, path + " is not valid JSON"};
    auto loaded = parse_eventd_config(document, base);
    if (!loaded) return kmes::Error{loaded.error().code, path + ": " + loaded.error().message};
    return loaded;
}

std::vector<ConfigChange> tuning_changes(const EventdConfig& from, const EventdConfig& to,
                                         std::vector<std::string>* restart_only) {
    std::vector<ConfigChange> changes;
    auto tuning = [&](const char* key, auto a, auto b) {
        if (a != b) changes.push_back(ConfigChange{key, json(a), json(b)});
    };
    tuning("MaxBatchSize", from.max_batch_size, to.max_batch_size);
    tuning("MaxBatchLatencyMs", from.max_batch_latency_ms, to.max_batch_latency_ms);
    tuning("EventRetentionDays", from.event_retention_days, to.event_retention_days);
    tuning("EventRetentionMaxBytes", from.event_retention_max_bytes, to.event_retention_max_bytes);
    tuning("RetentionCheckIntervalMinutes", from.retention_check_interval_minutes, to.retention_check_interval_minutes);
    tuning("TestCommitDelayMs", from.test_commit_delay_ms, to.test_commit_delay_ms);
    if (restart_only) {
        auto fixed = [&](const char* key, bool differs) {
            if (differs) restart_only->push_back(key);
        };
        fixed("EventStorePath", from.event_store_path != to.event_store_path);
        fixed("QuerySocketPath", from.query_socket_path != to.query_socket_path);
        fixed("KmesSocketPath", from.kmes_socket_path != to.kmes_socket_path);
        fixed("StorageShards", from.storage_shards != to.storage_shards);
    }
    return changes;
}

}  // namespace eventd
