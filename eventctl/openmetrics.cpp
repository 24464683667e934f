#include "openmetrics.hpp"

#include <map>
#include <optional>

namespace eventctl {
namespace {

// One family: its samples come from `key` of every STATUS record of `kind`, labelled by the
// record's `label` field (none when empty), times `scale`. A summary reads `key` as its sum
// (seconds) and `count_key` as its count.
struct Metric {
    const char* kind;
    const char* key;
    const char* name;  // the sample name (counters: with _total)
    const char* type;  // gauge, counter, summary
    const char* help;
    const char* label = "";        // the record's field that tells the series apart: cpu, shard
    double scale = 1;              // e.g. 1e-9 for nanoseconds, 0.01 for percent
    const char* fixed_label = "";  // an extra label="value" of this series (e.g. reason="...")
    const char* count_key = "";    // summary: the count's field
};

const std::vector<Metric>& metrics() {
    static const std::vector<Metric> kMetrics = {
        // {kind:"daemon"}
        {"daemon", "uptime_s", "eventd_uptime_seconds", "gauge", "Seconds since eventd started."},
        {"daemon", "started_ns", "eventd_start_time_seconds", "gauge", "When eventd started, Unix time.", "", 1e-9},
        {"daemon", "cpus", "eventd_rings", "gauge", "KMES rings eventd drains (0 in collector mode)."},
        {"daemon", "shards", "eventd_shards", "gauge", "Active shard files."},
        // {kind:"ring"}, per CPU
        {"ring", "capacity_bytes", "eventd_ring_capacity_bytes", "gauge", "Size of the ring's data area.", "cpu"},
        {"ring", "fill_percent", "eventd_ring_fill_ratio", "gauge",
         "Share of the ring written and not yet read by eventd (1 = full: the next events overwrite unread ones).",
         "cpu", 0.01},
        {"ring", "reader_lag_bytes", "eventd_ring_reader_lag_bytes", "gauge", "Bytes written and not yet read.", "cpu"},
        {"ring", "last_sequence", "eventd_ring_last_sequence", "gauge", "Last sequence number read from the ring.",
         "cpu"},
        {"ring", "events", "eventd_events_read_total", "counter", "Events read from the ring.", "cpu"},
        {"ring", "lost_events", "eventd_events_lost_total", "counter",
         "Events lost in sequence gaps (overwritten before eventd read them), recorded as synthetic.gap.", "cpu"},
        {"ring", "gaps", "eventd_gaps_total", "counter", "Sequence gaps detected (synthetic.gap records).", "cpu"},
        {"ring", "skipped", "eventd_events_skipped_total", "counter",
         "Events skipped at startup because a shard already held them.", "cpu"},
        // {kind:"shard"}, per shard
        {"shard", "rows", "eventd_shard_rows", "gauge", "Rows in the shard file.", "shard"},
        {"shard", "rows_written", "eventd_events_stored_total", "counter",
         "Records committed to the shard since eventd started.", "shard"},
        {"shard", "bytes", "eventd_shard_size_bytes", "gauge", "Size of the shard file and its WAL.", "shard"},
        {"shard", "last_commit_ns", "eventd_shard_last_commit_timestamp_seconds", "gauge",
         "When the shard last committed, Unix time.", "shard", 1e-9},
        {"shard", "commit_ns_total", "eventd_commit_duration_seconds", "summary",
         "Time spent in COMMIT (fsync included) and the number of commits.", "shard", 1e-9, "", "batches"},
        {"shard", "failed_batches", "eventd_commit_failures_total", "counter",
         "Batches whose commit failed (their events are recorded as gaps).", "shard"},
        {"shard", "lost_events", "eventd_commit_lost_events_total", "counter", "Events lost in failed commits.",
         "shard"},
        {"shard", "queued", "eventd_shard_queue_length", "gauge", "Records handed to the writer, not yet in a batch.",
         "shard"},
        // {kind:"shard_indexes"}, per shard
        {"shard_indexes", "builds_started", "eventd_index_builds_started_total", "counter",
         "Secondary index builds started.", "shard"},
        {"shard_indexes", "builds_done", "eventd_index_builds_completed_total", "counter",
         "Secondary index builds completed.", "shard"},
        {"shard_indexes", "builds_cancelled", "eventd_index_builds_cancelled_total", "counter",
         "Secondary index builds cancelled to let ingestion go first.", "shard"},
        {"shard_indexes", "builds_failed", "eventd_index_builds_failed_total", "counter",
         "Secondary index builds that failed.", "shard"},
        {"shard_indexes", "dropped", "eventd_index_dropped_total", "counter", "Secondary indexes dropped.", "shard"},
        {"shard_indexes", "sheds_graduated", "eventd_index_sheds_total", "counter",
         "Indexes shed under ingestion pressure, by kind.", "shard", 1, "kind=\"graduated\""},
        {"shard_indexes", "sheds_emergency", "eventd_index_sheds_total", "counter",
         "Indexes shed under ingestion pressure, by kind.", "shard", 1, "kind=\"emergency\""},
        {"shard_indexes", "restored", "eventd_index_restored_total", "counter", "Shed indexes built again.", "shard"},
        // {kind:"retention"}
        {"retention", "runs", "eventd_retention_runs_total", "counter",
         "Retention passes run (EventRetentionDays, EventRetentionMaxBytes)."},
        {"retention", "deleted_rows", "eventd_retention_deleted_rows_total", "counter", "Rows retention deleted."},
        {"retention", "last_run_ns", "eventd_retention_last_run_timestamp_seconds", "gauge",
         "When the last retention pass ended, Unix time.", "", 1e-9},
        // {kind:"queries"}
        {"queries", "active", "eventd_queries_active", "gauge", "Open query connections, streams included."},
        {"queries", "streaming", "eventd_queries_streaming", "gauge", "Live streams."},
        {"queries", "accepted_total", "eventd_queries_accepted_total", "counter", "Query connections accepted."},
        {"queries", "refused_concurrency", "eventd_queries_refused_total", "counter",
         "Query connections refused, by the limit that refused them.", "", 1, "reason=\"concurrency\""},
        {"queries", "refused_streaming", "eventd_queries_refused_total", "counter",
         "Query connections refused, by the limit that refused them.", "", 1, "reason=\"streaming\""},
        {"queries", "refused_per_user", "eventd_queries_refused_total", "counter",
         "Query connections refused, by the limit that refused them.", "", 1, "reason=\"per_user\""},
        {"queries", "refused_streaming_per_user", "eventd_queries_refused_total", "counter",
         "Query connections refused, by the limit that refused them.", "", 1, "reason=\"streaming_per_user\""},
        {"queries", "timeouts", "eventd_query_timeouts_total", "counter", "Queries ended by QueryTimeoutMs."},
        {"queries", "dropped_streams", "eventd_streams_dropped_total", "counter",
         "Streams ended because their client did not keep up."},
        {"queries", "errors", "eventd_query_errors_total", "counter", "Queries answered with an error."},
        // {kind:"collector"} (collector mode)
        {"collector", "pending", "eventd_collector_pending_records", "gauge",
         "Records in the stream not yet delivered to this collector (its consumer's lag)."},
        {"collector", "ack_pending", "eventd_collector_ack_pending_records", "gauge",
         "Records delivered, not yet acknowledged."},
        {"collector", "received", "eventd_collector_received_total", "counter", "Records received from JetStream."},
        {"collector", "duplicates", "eventd_collector_duplicates_total", "counter",
         "Records received that the store already held (not stored again)."},
        {"collector", "acked", "eventd_collector_acknowledged_total", "counter",
         "Records acknowledged after their commit."},
        {"collector", "refused", "eventd_collector_refused_total", "counter",
         "Messages refused: not eventd records, or not from the host their subject names."},
        {"collector", "sessions", "eventd_collector_sessions_total", "counter", "NATS sessions started."},
    };
    return kMetrics;
}

// Label values escape backslash, double quote and newline (OpenMetrics §ABNF).
std::string label_value(const Json& v) {
    const std::string text = v.is_string() ? v.get<std::string>() : v.dump();
    std::string out;
    for (const char c : text) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '"')
            out += "\\\"";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out;
}

std::optional<std::string> number(const Json& v, double scale) {
    if (!v.is_number()) return std::nullopt;
    if (scale == 1 && v.is_number_integer()) return v.dump();
    return Json(v.get<double>() * scale).dump();  // the shortest text that reads back the same
}

std::string labels(const Json& record, const Metric& m) {
    std::string out;
    if (*m.label && record.contains(m.label)) out += std::string(m.label) + "=\"" + label_value(record[m.label]) + "\"";
    if (*m.fixed_label) out += (out.empty() ? "" : ",") + std::string(m.fixed_label);
    return out.empty() ? "" : "{" + out + "}";
}

// The family name # HELP and # TYPE name: the sample's, `_total` included, as the Prometheus
// text format (0.0.4) has it — what node_exporter's textfile collector and `promtool check
// metrics` parse. (Strict OpenMetrics would name a counter's family without `_total`; the
// Prometheus parsers then see two metrics.)
std::string family(const Metric& m) { return m.name; }

}  // namespace

std::string render_openmetrics(const std::vector<Json>& records) {
    // Samples by family, in the order of the table.
    std::vector<std::string> order;
    std::map<std::string, std::pair<const Metric*, std::string>> families;
    for (const Metric& m : metrics()) {
        const std::string name = family(m);
        auto [it, fresh] = families.try_emplace(name, &m, std::string());
        if (fresh) order.push_back(name);
        std::string& samples = it->second.second;
        for (const Json& r : records) {
            if (r.value("kind", "") != m.kind || !r.contains(m.key)) continue;
            const auto value = number(r[m.key], m.scale);
            if (!value) continue;  // null: not known (e.g. a shard whose rows were not counted)
            const std::string l = labels(r, m);
            if (std::string(m.type) == "summary") {
                const auto count = r.contains(m.count_key) ? number(r[m.count_key], 1) : std::nullopt;
                if (!count) continue;
                samples += name + "_sum" + l + " " + *value + "\n" + name + "_count" + l + " " + *count + "\n";
            } else {
                samples += m.name + l + " " + *value + "\n";
            }
        }
    }
    std::string out;
    // Which eventd answered: boot and mode as labels of a constant 1.
    for (const Json& r : records) {
        if (r.value("kind", "") != "daemon") continue;
        out += "# HELP eventd_info The eventd that answered: its boot (run) id and mode.\n# TYPE eventd_info gauge\n";
        out += "eventd_info{boot_id=\"" + label_value(r.value("boot_id", Json(""))) + "\",mode=\"" +
               label_value(r.value("mode", Json("host"))) + "\"} 1\n";
    }
    for (const std::string& name : order) {
        const auto& [m, samples] = families[name];
        if (samples.empty()) continue;
        out += "# HELP " + name + " " + m->help + "\n# TYPE " + name + " " + m->type + "\n" + samples;
    }
    return out + "# EOF\n";
}

}  // namespace eventctl
