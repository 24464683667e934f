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
    base::Status required_path(const char* key, std::string& target) {
        if (!doc_.contains(key))
            return base::Error{EINVAL, std::string("required configuration key ") + key + " is missing"};
        const json& v = doc_[key];
        if (!v.is_string() || v.get<std::string>().empty())
            return base::Error{EINVAL, std::string("required configuration key ") + key +
                                           " must be a non-empty path string, got " + v.dump()};
        target = v.get<std::string>();
        return {};
    }

    void optional_path(const char* key, std::string& target) {
        if (!doc_.contains(key)) return;
        out_.present.insert(key);
        const json& v = doc_[key];
        if (v.is_string() && !v.get<std::string>().empty())
            target = v.get<std::string>();
        else
            problem(key, v, json(target));
    }

    // `target` holds the default; an invalid value sets it to `kept` (the value in force).
    template <class T>
    void number(const char* key, T& target, uint64_t min, uint64_t max, T kept) {
        if (!doc_.contains(key)) return;
        out_.present.insert(key);
        const json& v = doc_[key];
        if (is_count(v) && v.get<uint64_t>() >= min && v.get<uint64_t>() <= max) {
            target = static_cast<T>(v.get<uint64_t>());
        } else {
            target = kept;
            problem(key, v, json(kept), " (valid: " + std::to_string(min) + ".." + std::to_string(max) + ")");
        }
    }

private:
    void problem(const char* key, const json& bad, const json& kept, const std::string& range = "") {
        out_.problems.push_back(ConfigProblem{key, "invalid value " + bad.dump() + range + ", using " + kept.dump()});
    }
    const json& doc_;
    LoadedConfig& out_;
};

}  // namespace

base::Result<LoadedConfig> parse_eventd_config(const json& document, const EventdConfig& in_force) {
    if (!document.is_object()) return base::Error{EINVAL, "the configuration must be a JSON object"};
    LoadedConfig out{EventdConfig{}, {}, {}};
    EventdConfig& c = out.config;
    const EventdConfig& k = in_force;
    Reader r(document, out);
    if (auto s = r.required_path("EventStorePath", c.event_store_path); !s) return s.error();
    if (auto s = r.required_path("QuerySocketPath", c.query_socket_path); !s) return s.error();
    r.optional_path("KmesSocketPath", c.kmes_socket_path);
    r.optional_path("DetectionRulesPath", c.detection_rules_path);
    // PSD-008 §12.1 ranges.
    r.number("StorageShards", c.storage_shards, 0, 256, k.storage_shards);
    if (document.contains("CollectorSource")) {
        out.present.insert("CollectorSource");
        auto source = collector::parse_source_config(document["CollectorSource"]);
        if (!source) return source.error();
        c.collector = std::move(*source);
    }
    r.number("MaxBatchSize", c.max_batch_size, 100, 100000, k.max_batch_size);
    r.number("MaxBatchLatencyMs", c.max_batch_latency_ms, 10, 5000, k.max_batch_latency_ms);
    r.number("CommitDelayMs", c.commit_delay_ms, 0, 1000, k.commit_delay_ms);
    r.number("CheckpointIntervalSeconds", c.checkpoint_interval_seconds, 1, 3600, k.checkpoint_interval_seconds);
    r.number("EventRetentionDays", c.event_retention_days, 1, 3650, k.event_retention_days);
    r.number("EventRetentionMaxBytes", c.event_retention_max_bytes, 0, UINT64_MAX, k.event_retention_max_bytes);
    r.number("RetentionCheckIntervalMinutes", c.retention_check_interval_minutes, 1, 1440,
             k.retention_check_interval_minutes);
    r.number("AdaptiveIndexWindowHours", c.adaptive_index_window_hours, 1, 168, k.adaptive_index_window_hours);
    r.number("AdaptiveIndexPolicyIntervalMinutes", c.adaptive_index_policy_interval_minutes, 60, 1440,
             k.adaptive_index_policy_interval_minutes);
    r.number("AdaptiveIndexCreateThreshold", c.adaptive_index_create_threshold, 10, 10000,
             k.adaptive_index_create_threshold);
    r.number("AdaptiveIndexDropThreshold", c.adaptive_index_drop_threshold, 1, 1000, k.adaptive_index_drop_threshold);
    // §3.3.8: the drop threshold MUST be lower than the create threshold (hysteresis). A pair
    // that breaks it is one invalid value: the pair in force stays (never half of each).
    if (c.adaptive_index_drop_threshold >= c.adaptive_index_create_threshold) {
        out.problems.push_back(ConfigProblem{
            "AdaptiveIndexDropThreshold", "drop threshold " + std::to_string(c.adaptive_index_drop_threshold) +
                                              " is not lower than AdaptiveIndexCreateThreshold " +
                                              std::to_string(c.adaptive_index_create_threshold) + "; keeping create " +
                                              std::to_string(k.adaptive_index_create_threshold) + " and drop " +
                                              std::to_string(k.adaptive_index_drop_threshold)});
        c.adaptive_index_create_threshold = k.adaptive_index_create_threshold;
        c.adaptive_index_drop_threshold = k.adaptive_index_drop_threshold;
    }
    r.number("SheddingWindowSeconds", c.shedding_window_seconds, 10, 300, k.shedding_window_seconds);
    r.number("SheddingBatchPercent", c.shedding_batch_percent, 50, 100, k.shedding_batch_percent);
    r.number("EmergencySheddingBufferPercent", c.emergency_shedding_buffer_percent, 50, 95,
             k.emergency_shedding_buffer_percent);
    r.number("QueryTimeoutMs", c.query_timeout_ms, 1000, 300000, k.query_timeout_ms);
    r.number("MaxConcurrentQueries", c.max_concurrent_queries, 1, 4096, k.max_concurrent_queries);
    r.number("MaxStreamingQueries", c.max_streaming_queries, 1, 1024, k.max_streaming_queries);
    r.number("MaxQueriesPerUser", c.max_queries_per_user, 1, 4096, k.max_queries_per_user);
    r.number("MaxStreamingQueriesPerUser", c.max_streaming_queries_per_user, 1, 1024,
             k.max_streaming_queries_per_user);
    r.number("AdminReservedQueries", c.admin_reserved_queries, 0, 256, k.admin_reserved_queries);
    r.number("UserQueryNice", c.user_query_nice, 0, 19, k.user_query_nice);
    r.number("MaxRunningQueriesPerUser", c.max_running_queries_per_user, 1, 4096, k.max_running_queries_per_user);
    r.number("MaxQueryGroupBytes", c.max_query_group_bytes, 1048576, 68719476736ULL, k.max_query_group_bytes);
    r.number("MaxQueryMessageBytes", c.max_query_message_bytes, 1024, 16777216, k.max_query_message_bytes);
    r.number("QueryResponseTargetBytes", c.query_response_target_bytes, 1024, 16777216, k.query_response_target_bytes);
    if (document.contains("Security")) {
        out.present.insert("Security");
        c.security = document["Security"];  // validated by access::Policy::parse (fail closed)
    }
    return out;
}

base::Result<LoadedConfig> load_eventd_config(const std::string& path, const EventdConfig& in_force) {
    std::ifstream in(path);
    if (!in) return base::Error{errno, "cannot read configuration " + path + ": " + std::strerror(errno)};
    json document = json::parse(in, nullptr, /*allow_exceptions=*/false, /*ignore_comments=*/true);
    if (document.is_discarded()) return base::Error{EINVAL, path + " is not valid JSON"};
    auto loaded = parse_eventd_config(document, in_force);
    if (!loaded) return base::Error{loaded.error().code, path + ": " + loaded.error().message};
    return loaded;
}

std::vector<ConfigChange> tuning_changes(const LoadedConfig& from, const LoadedConfig& to,
                                         std::vector<std::string>* restart_only) {
    std::vector<ConfigChange> changes;
    auto value = [](const LoadedConfig& c, const char* key, const json& v) {
        return c.present.count(key) ? v : json(nullptr);  // absent from the file: nil
    };
    auto tuning = [&](const char* key, auto a, auto b) {
        const json before = value(from, key, json(a));
        const json after = value(to, key, json(b));
        if (a != b || before.is_null() != after.is_null()) changes.push_back(ConfigChange{key, before, after});
    };
    const EventdConfig& f = from.config;
    const EventdConfig& t = to.config;
    tuning("MaxBatchSize", f.max_batch_size, t.max_batch_size);
    tuning("MaxBatchLatencyMs", f.max_batch_latency_ms, t.max_batch_latency_ms);
    tuning("CommitDelayMs", f.commit_delay_ms, t.commit_delay_ms);
    tuning("CheckpointIntervalSeconds", f.checkpoint_interval_seconds, t.checkpoint_interval_seconds);
    tuning("EventRetentionDays", f.event_retention_days, t.event_retention_days);
    tuning("EventRetentionMaxBytes", f.event_retention_max_bytes, t.event_retention_max_bytes);
    tuning("RetentionCheckIntervalMinutes", f.retention_check_interval_minutes, t.retention_check_interval_minutes);
    tuning("AdaptiveIndexWindowHours", f.adaptive_index_window_hours, t.adaptive_index_window_hours);
    tuning("AdaptiveIndexPolicyIntervalMinutes", f.adaptive_index_policy_interval_minutes,
           t.adaptive_index_policy_interval_minutes);
    tuning("AdaptiveIndexCreateThreshold", f.adaptive_index_create_threshold, t.adaptive_index_create_threshold);
    tuning("AdaptiveIndexDropThreshold", f.adaptive_index_drop_threshold, t.adaptive_index_drop_threshold);
    tuning("SheddingWindowSeconds", f.shedding_window_seconds, t.shedding_window_seconds);
    tuning("SheddingBatchPercent", f.shedding_batch_percent, t.shedding_batch_percent);
    tuning("EmergencySheddingBufferPercent", f.emergency_shedding_buffer_percent, t.emergency_shedding_buffer_percent);
    tuning("QueryTimeoutMs", f.query_timeout_ms, t.query_timeout_ms);
    tuning("MaxConcurrentQueries", f.max_concurrent_queries, t.max_concurrent_queries);
    tuning("MaxStreamingQueries", f.max_streaming_queries, t.max_streaming_queries);
    tuning("MaxQueriesPerUser", f.max_queries_per_user, t.max_queries_per_user);
    tuning("MaxStreamingQueriesPerUser", f.max_streaming_queries_per_user, t.max_streaming_queries_per_user);
    tuning("AdminReservedQueries", f.admin_reserved_queries, t.admin_reserved_queries);
    tuning("UserQueryNice", f.user_query_nice, t.user_query_nice);
    tuning("MaxRunningQueriesPerUser", f.max_running_queries_per_user, t.max_running_queries_per_user);
    tuning("MaxQueryGroupBytes", f.max_query_group_bytes, t.max_query_group_bytes);
    tuning("MaxQueryMessageBytes", f.max_query_message_bytes, t.max_query_message_bytes);
    tuning("QueryResponseTargetBytes", f.query_response_target_bytes, t.query_response_target_bytes);
    if (f.security != t.security || from.present.count("Security") != to.present.count("Security"))
        changes.push_back(
            ConfigChange{"Security", value(from, "Security", f.security), value(to, "Security", t.security)});
    if (restart_only) {
        auto fixed = [&](const char* key, bool differs) {
            if (differs) restart_only->push_back(key);
        };
        fixed("EventStorePath", f.event_store_path != t.event_store_path);
        fixed("QuerySocketPath", f.query_socket_path != t.query_socket_path);
        fixed("KmesSocketPath", f.kmes_socket_path != t.kmes_socket_path);
        fixed("DetectionRulesPath", f.detection_rules_path != t.detection_rules_path);
        fixed("StorageShards", f.storage_shards != t.storage_shards);
        fixed("CollectorSource", f.collector != t.collector);
    }
    return changes;
}

}  // namespace eventd
