#include "openmetrics.hpp"

#include <map>
#include <optional>

#include "protocol/status.hpp"

namespace eventctl {
namespace {

// A key of a STATUS record kind, checked against the schema (protocol/status.hpp).
#define K(R, member) EVENTD_STATUS_KEY(protocol::status::R, member)

// One family: its samples come from `field` (a key of one record kind, protocol/status.hpp) of
// every STATUS record of that kind, labelled by the record's `label` key (none when empty),
// times `scale`. A summary reads `field` as its sum (seconds) and `count_key` as its count.
struct Metric {
    protocol::status::Key field;  // where the samples come from
    const char* name;             // the sample name (counters: with _total)
    const char* type;             // gauge, counter, summary
    const char* help;
    const char* label = "";        // the record's field that tells the series apart: cpu, shard
    double scale = 1;              // e.g. 1e-9 for nanoseconds, 0.01 for percent
    const char* fixed_label = "";  // an extra label="value" of this series (e.g. reason="...")
    const char* count_key = "";    // summary: the count's field
};

const std::vector<Metric>& metrics() {
    static const std::vector<Metric> kMetrics = {
        // {kind:"daemon"}
        {K(Daemon, uptime_s), "eventd_uptime_seconds", "gauge", "Seconds since eventd started."},
        {K(Daemon, started_ns), "eventd_start_time_seconds", "gauge", "When eventd started, Unix time.", "", 1e-9},
        {K(Daemon, cpus), "eventd_rings", "gauge", "KMES rings eventd drains (0 in collector mode)."},
        {K(Daemon, shards), "eventd_shards", "gauge", "Active shard files."},
        // {kind:"ring"}, per CPU
        {K(Ring, capacity_bytes), "eventd_ring_capacity_bytes", "gauge", "Size of the ring's data area.",
         K(Ring, cpu).key},
        {K(Ring, fill_percent), "eventd_ring_fill_ratio", "gauge",
         "Share of the ring written and not yet read by eventd (1 = full: the next events overwrite unread ones).",
         K(Ring, cpu).key, 0.01},
        {K(Ring, reader_lag_bytes), "eventd_ring_reader_lag_bytes", "gauge", "Bytes written and not yet read.",
         K(Ring, cpu).key},
        {K(Ring, last_sequence), "eventd_ring_last_sequence", "gauge", "Last sequence number read from the ring.",
         K(Ring, cpu).key},
        {K(Ring, events), "eventd_events_read_total", "counter", "Events read from the ring.", K(Ring, cpu).key},
        {K(Ring, lost_events), "eventd_events_lost_total", "counter",
         "Events lost in sequence gaps (overwritten before eventd read them), recorded as synthetic.gap.",
         K(Ring, cpu).key},
        {K(Ring, gaps), "eventd_gaps_total", "counter", "Sequence gaps detected (synthetic.gap records).",
         K(Ring, cpu).key},
        {K(Ring, skipped), "eventd_events_skipped_total", "counter",
         "Events skipped at startup because a shard already held them.", K(Ring, cpu).key},
        // {kind:"shard"}, per shard
        {K(Shard, rows), "eventd_shard_rows", "gauge", "Rows in the shard file.", K(Shard, shard).key},
        {K(Shard, rows_written), "eventd_events_stored_total", "counter",
         "Records committed to the shard since eventd started.", K(Shard, shard).key},
        {K(Shard, bytes), "eventd_shard_size_bytes", "gauge", "Size of the shard file and its WAL.",
         K(Shard, shard).key},
        {K(Shard, last_commit_ns), "eventd_shard_last_commit_timestamp_seconds", "gauge",
         "When the shard last committed, Unix time.", K(Shard, shard).key, 1e-9},
        {K(Shard, commit_ns_total), "eventd_commit_duration_seconds", "summary",
         "Time spent in COMMIT (fsync included) and the number of commits.", K(Shard, shard).key, 1e-9, "",
         K(Shard, batches).key},
        {K(Shard, failed_batches), "eventd_commit_failures_total", "counter",
         "Batches whose commit failed (their events are recorded as gaps).", K(Shard, shard).key},
        {K(Shard, lost_events), "eventd_commit_lost_events_total", "counter", "Events lost in failed commits.",
         K(Shard, shard).key},
        {K(Shard, queued), "eventd_shard_queue_length", "gauge", "Records handed to the writer, not yet in a batch.",
         K(Shard, shard).key},
        // {kind:"shard_indexes"}, per shard
        {K(ShardIndexes, builds_started), "eventd_index_builds_started_total", "counter",
         "Secondary index builds started.", K(ShardIndexes, shard).key},
        {K(ShardIndexes, builds_done), "eventd_index_builds_completed_total", "counter",
         "Secondary index builds completed.", K(ShardIndexes, shard).key},
        {K(ShardIndexes, builds_cancelled), "eventd_index_builds_cancelled_total", "counter",
         "Secondary index builds cancelled to let ingestion go first.", K(ShardIndexes, shard).key},
        {K(ShardIndexes, builds_failed), "eventd_index_builds_failed_total", "counter",
         "Secondary index builds that failed.", K(ShardIndexes, shard).key},
        {K(ShardIndexes, dropped), "eventd_index_dropped_total", "counter", "Secondary indexes dropped.",
         K(ShardIndexes, shard).key},
        {K(ShardIndexes, sheds_graduated), "eventd_index_sheds_total", "counter",
         "Indexes shed under ingestion pressure, by kind.", K(ShardIndexes, shard).key, 1, "kind=\"graduated\""},
        {K(ShardIndexes, sheds_emergency), "eventd_index_sheds_total", "counter",
         "Indexes shed under ingestion pressure, by kind.", K(ShardIndexes, shard).key, 1, "kind=\"emergency\""},
        {K(ShardIndexes, restored), "eventd_index_restored_total", "counter", "Shed indexes built again.",
         K(ShardIndexes, shard).key},
        // {kind:"retention"}
        {K(Retention, runs), "eventd_retention_runs_total", "counter",
         "Retention passes run (EventRetentionDays, EventRetentionMaxBytes)."},
        {K(Retention, deleted_rows), "eventd_retention_deleted_rows_total", "counter", "Rows retention deleted."},
        {K(Retention, last_run_ns), "eventd_retention_last_run_timestamp_seconds", "gauge",
         "When the last retention pass ended, Unix time.", "", 1e-9},
        // {kind:"sealing"}
        {K(Sealing, sealed), "eventd_sealing_enabled", "gauge",
         "1 when eventd seals the store with signed checkpoints (docs/STORE.md §8)."},
        {K(Sealing, checkpoints), "eventd_sealing_checkpoints_total", "counter",
         "Signed checkpoints committed since eventd started, all shards."},
        {K(Sealing, last_checkpoint_ns), "eventd_sealing_last_checkpoint_timestamp_seconds", "gauge",
         "When the newest signed checkpoint was committed, Unix time.", "", 1e-9},
        {K(Sealing, keys_end_ns), "eventd_sealing_keys_end_timestamp_seconds", "gauge",
         "When the sealing keys end: set up new ones before, Unix time.", "", 1e-9},
        // {kind:"access_policy"}
        {K(AccessPolicy, refused), "eventd_access_policy_refused", "gauge",
         "1 when the configured access policy was refused and only root reads (eventctl status, Access policy)."},
        {K(AccessPolicy, deny_failing_closed), "eventd_access_policy_deny_failing_closed", "gauge",
         "Deny entries denying everyone because a user or group name did not resolve at the last load."},
        // {kind:"queries"}
        {K(Queries, active), "eventd_queries_active", "gauge", "Open query connections, streams included."},
        {K(Queries, streaming), "eventd_queries_streaming", "gauge", "Live streams."},
        {K(Queries, accepted_total), "eventd_queries_accepted_total", "counter", "Query connections accepted."},
        {K(Queries, refused_concurrency), "eventd_queries_refused_total", "counter",
         "Query connections refused, by the limit that refused them.", "", 1, "reason=\"concurrency\""},
        {K(Queries, refused_streaming), "eventd_queries_refused_total", "counter",
         "Query connections refused, by the limit that refused them.", "", 1, "reason=\"streaming\""},
        {K(Queries, refused_per_user), "eventd_queries_refused_total", "counter",
         "Query connections refused, by the limit that refused them.", "", 1, "reason=\"per_user\""},
        {K(Queries, refused_streaming_per_user), "eventd_queries_refused_total", "counter",
         "Query connections refused, by the limit that refused them.", "", 1, "reason=\"streaming_per_user\""},
        {K(Queries, waited_running_per_user), "eventd_queries_waited_total", "counter",
         "Queries that waited for another query of their user to end (MaxRunningQueriesPerUser)."},
        {K(Queries, over_group_budget), "eventd_queries_over_group_budget_total", "counter",
         "Aggregate queries ended because their groups passed MaxQueryGroupBytes."},
        {K(Queries, timeouts), "eventd_query_timeouts_total", "counter", "Queries ended by QueryTimeoutMs."},
        {K(Queries, dropped_streams), "eventd_streams_dropped_total", "counter",
         "Streams ended because their client did not keep up."},
        {K(Queries, errors), "eventd_query_errors_total", "counter", "Queries answered with an error."},
        // {kind:"collector"} (collector mode)
        {K(Collector, pending), "eventd_collector_pending_messages", "gauge",
         "Messages in the stream not yet delivered to this collector (its consumer's lag; a message packs one or "
         "more records)."},
        {K(Collector, ack_pending), "eventd_collector_ack_pending_messages", "gauge",
         "Messages delivered, not yet acknowledged."},
        {K(Collector, received), "eventd_collector_received_total", "counter", "Records received from JetStream."},
        {K(Collector, messages), "eventd_collector_messages_total", "counter", "Messages received from JetStream."},
        {K(Collector, duplicates), "eventd_collector_duplicates_total", "counter",
         "Records received that the store already held (not stored again)."},
        {K(Collector, acked), "eventd_collector_acknowledged_total", "counter",
         "Messages acknowledged after the commit of all their records."},
        {K(Collector, refused), "eventd_collector_refused_total", "counter",
         "Messages refused (not a host's own eventd records) and terminated, each kept as a "
         "synthetic.collector_rejected record."},
        {K(Collector, sessions), "eventd_collector_sessions_total", "counter", "NATS sessions started."},
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
    if (v.is_boolean()) return v.get<bool>() ? "1" : "0";  // a state as a 0/1 gauge (eventd_sealing_enabled)
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
            if (protocol::status::kind_of(r) != m.field.kind || !r.contains(m.field.key)) continue;
            const auto value = number(r[m.field.key], m.scale);
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
        auto daemon = protocol::status::from_record<protocol::status::Daemon>(r);
        if (!daemon) continue;
        out += "# HELP eventd_info The eventd that answered: its boot (run) id and mode.\n# TYPE eventd_info gauge\n";
        out += "eventd_info{boot_id=\"" + label_value(Json(daemon->boot_id)) + "\",mode=\"" +
               label_value(Json(daemon->mode.empty() ? "host" : daemon->mode)) + "\"} 1\n";
    }
    for (const std::string& name : order) {
        const auto& [m, samples] = families[name];
        if (samples.empty()) continue;
        out += "# HELP " + name + " " + m->help + "\n# TYPE " + name + " " + m->type + "\n" + samples;
    }
    return out + "# EOF\n";
}

}  // namespace eventctl
