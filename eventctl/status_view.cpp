#include "status_view.hpp"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <functional>
#include <map>
#include <set>
#include <string_view>

#include "pretty_format.hpp"
#include "protocol/status.hpp"
#include "text_table.hpp"
#include "time_text.hpp"

namespace eventctl {
namespace {

// The records' kinds and keys are the schema's (protocol/status.hpp), checked by the compiler.
namespace st = protocol::status;
#define K(R, member) EVENTD_STATUS_KEY(st::R, member)
#define M(R, member) EVENTD_STATUS_MEMBER(st::R, member)

using Render = std::function<std::string(const Json&)>;

struct Column {
    const char* key;  // EVENTD_STATUS_MEMBER or K(…).key: one of the schema's keys
    const char* header;
    Render render;
    bool right = true;
};

std::string printf_string(const char* format, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, format, v);
    return buf;
}

bool is_number(const Json& v) { return v.is_number() && !(v.is_number_float() && !std::isfinite(v.get<double>())); }

// Any value as a table cell: strings without quotes (still escaped), the rest as in pretty.
// Re-encoded to msgpack so that pretty_format.cpp's one writer renders it (the cells are few).
std::string plain(const Json& v) {
    if (v.is_string()) {
        const std::string quoted = pretty_string(v.get_ref<const std::string&>());
        return quoted.substr(1, quoted.size() - 2);
    }
    std::string out;
    const std::vector<uint8_t> bytes = Json::to_msgpack(v);
    if (!append_pretty_value(out, bytes)) return "?";  // cannot happen: nlohmann wrote the bytes
    return out;
}

std::string bytes(const Json& v) {
    if (!is_number(v)) return plain(v);
    static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double n = v.get<double>();
    std::size_t unit = 0;
    while (std::fabs(n) >= 1024 && unit + 1 < std::size(kUnits)) {
        n /= 1024;
        ++unit;
    }
    if (unit == 0) return plain(v) + " B";
    return printf_string("%.1f ", n) + kUnits[unit];
}

Render fixed(const char* format) {
    return [format](const Json& v) { return is_number(v) ? printf_string(format, v.get<double>()) : plain(v); };
}

// Nanoseconds since the epoch → UTC time to the millisecond; 0 or null → never.
std::string time_ns(const Json& v) {
    if (v.is_null() || (is_number(v) && v.get<double>() == 0)) return "never";
    if (!v.is_number_integer()) return plain(v);
    return rfc3339(v.get<int64_t>(), TimeZone::utc, 3);
}

bool ends_with(const std::string& s, const char* suffix) {
    const std::string_view x(suffix);
    return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
}

// A key eventctl does not know, shown by its unit suffix where it has one.
std::string by_suffix(const std::string& key, const Json& v) {
    if (ends_with(key, "_ns")) return time_ns(v);
    if (ends_with(key, "_bytes")) return bytes(v);
    if (v.is_number_float() && (ends_with(key, "_ms") || ends_with(key, "_percent") || ends_with(key, "_per_s"))) {
        return fixed("%.2f")(v);
    }
    return plain(v);
}

const std::vector<Column>& ring_columns() {
    static const std::vector<Column> kColumns = {
        {K(Ring, cpu).key, "CPU", plain},
        {K(Ring, capacity_bytes).key, "CAPACITY", bytes},
        {K(Ring, fill_percent).key, "FILL", fixed("%.1f %%")},
        {K(Ring, reader_lag_bytes).key, "READER LAG", bytes},
        {K(Ring, last_sequence).key, "LAST SEQUENCE", plain},
        {K(Ring, gaps).key, "GAPS", plain},
        {K(Ring, lost_events).key, "LOST EVENTS", plain},
    };
    return kColumns;
}

const std::vector<Column>& shard_columns() {
    static const std::vector<Column> kColumns = {
        {K(Shard, shard).key, "SHARD", plain},
        {K(Shard, file).key, "FILE", plain, false},
        {K(Shard, rows).key, "ROWS", plain},
        {K(Shard, bytes).key, "SIZE", bytes},
        {K(Shard, last_commit_ns).key, "LAST COMMIT (UTC)", time_ns, false},
        {K(Shard, batches).key, "BATCHES", plain},
        {K(Shard, avg_batch_size).key, "AVG BATCH", fixed("%.1f")},
        {K(Shard, last_batch_size).key, "LAST BATCH", plain},
        {K(Shard, commit_latency_ms).key, "COMMIT MS", fixed("%.2f")},
        {K(Shard, failed_batches).key, "FAILED BATCHES", plain},
        {K(Shard, lost_events).key, "LOST EVENTS", plain},
    };
    return kColumns;
}

// Secondary indexes per shard (PSD-008 §3.3): what exists, what the desired set still wants
// here, and what building and shedding did.
const std::vector<Column>& index_columns() {
    static const std::vector<Column> kColumns = {
        {K(ShardIndexes, shard).key, "SHARD", plain},
        {K(ShardIndexes, indexes).key, "INDEXES", plain, false},
        {K(ShardIndexes, missing).key, "DESIRED, MISSING", plain, false},
        {K(ShardIndexes, building).key, "BUILDING", plain, false},
        {K(ShardIndexes, builds_done).key, "BUILT", plain},
        {K(ShardIndexes, builds_cancelled).key, "CANCELLED", plain},
        {K(ShardIndexes, builds_failed).key, "FAILED", plain},
        {K(ShardIndexes, dropped).key, "DROPPED", plain},
        {K(ShardIndexes, sheds_graduated).key, "SHED (GRADUATED)", plain},
        {K(ShardIndexes, sheds_emergency).key, "SHED (EMERGENCY)", plain},
        {K(ShardIndexes, restored).key, "RESTORED", plain},
    };
    return kColumns;
}

// "wal_bytes" → "WAL BYTES", like the known headers.
std::string header_of(const std::string& key) {
    std::string out = pretty_key(key);
    for (char& c : out) {
        if (c == '_') c = ' ';
        if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    }
    return out;
}

// One table for all records of a kind: the known columns, then every other key in order of
// first appearance (headed by its name).
std::string table(const std::vector<const Json*>& records, const std::vector<Column>& known) {
    TextTable t;
    std::set<std::string> known_keys = {"kind"};
    for (const auto& c : known) {
        t.add_column(c.header, c.right);
        known_keys.insert(c.key);
    }
    std::vector<std::string> extra;
    for (const Json* r : records) {
        for (const auto& [k, v] : r->items()) {
            if (known_keys.insert(k).second) extra.push_back(k);
        }
    }
    for (const auto& k : extra) t.add_column(header_of(k), true);
    for (const Json* r : records) {
        std::vector<std::string> cells;
        for (const auto& c : known) cells.push_back(r->contains(c.key) ? c.render((*r)[c.key]) : "-");
        for (const auto& k : extra) cells.push_back(r->contains(k) ? by_suffix(k, (*r)[k]) : "-");
        t.add_row(std::move(cells));
    }
    return t.render("  ");
}

std::string label(const std::string& key) {
    std::string out = key;
    for (char& c : out) {
        if (c == '_') c = ' ';
    }
    return out;
}

// Key/value lines: the known keys in their order with their labels, then the others.
struct Line {
    const char* key;  // K(…).key
    const char* label;
    Render render;
};

std::string lines(const Json& record, const std::vector<Line>& known) {
    std::vector<std::pair<std::string, std::string>> rows;
    std::set<std::string> seen = {"kind"};
    for (const auto& l : known) {
        seen.insert(l.key);
        if (record.contains(l.key)) rows.emplace_back(l.label, l.render(record[l.key]));
    }
    for (const auto& [k, v] : record.items()) {
        if (seen.insert(k).second) rows.emplace_back(label(k), by_suffix(k, v));
    }
    std::size_t width = 0;
    for (const auto& r : rows) width = std::max(width, r.first.size());
    std::string out;
    for (const auto& [name, value] : rows)
        out += "  " + name + std::string(width - name.size() + 2, ' ') + value + "\n";
    return out;
}

std::string per_second(const Json& v) { return is_number(v) ? printf_string("%.1f/s", v.get<double>()) : plain(v); }

const std::vector<Line>& rate_lines() {
    static const std::vector<Line> kLines = {
        {K(Rates, events_in_per_s).key, "events in", per_second},
        {K(Rates, events_out_per_s).key, "events out", per_second},
    };
    return kLines;
}

const std::vector<Line>& query_lines() {
    static const std::vector<Line> kLines = {
        {K(Queries, active).key, "active", plain},
        {K(Queries, streaming).key, "streaming", plain},
        {K(Queries, refused_total).key, "refused (total)", plain},
        {K(Queries, refused_concurrency).key, "refused: MaxConcurrentQueries", plain},
        {K(Queries, refused_streaming).key, "refused: MaxStreamingQueries", plain},
        {K(Queries, refused_per_user).key, "refused: MaxQueriesPerUser", plain},
        {K(Queries, refused_streaming_per_user).key, "refused: MaxStreamingQueriesPerUser", plain},
        {K(Queries, waited_running_per_user).key, "waited: MaxRunningQueriesPerUser", plain},
        {K(Queries, over_group_budget).key, "ended: MaxQueryGroupBytes", plain},
        {K(Queries, timeouts).key, "timed out", plain},
        {K(Queries, dropped_streams).key, "streams dropped (slow reader)", plain},
    };
    return kLines;
}

// {kind:"retention"} (eventd/retention/retention_thread.hpp): passes since eventd started.
const std::vector<Line>& retention_lines() {
    static const std::vector<Line> kLines = {
        {K(Retention, runs).key, "passes", plain},
        {K(Retention, deleted_rows).key, "rows deleted", plain},
        {K(Retention, last_run_ns).key, "last pass ended (UTC)", time_ns},
    };
    return kLines;
}

// {kind:"sealing"} (issue 28, docs/STORE.md §8): whether the store is sealed, with which keys.
const std::vector<Line>& sealing_lines() {
    static const std::vector<Line> kLines = {
        {K(Sealing, sealed).key, "sealed", plain},
        {K(Sealing, problem).key, "not sealed because", plain},
        {K(Sealing, epoch).key, "key epoch", plain},
        {K(Sealing, epoch_seconds).key, "epoch length (s)", plain},
        {K(Sealing, keys_end_ns).key, "keys end (UTC)", time_ns},
        {K(Sealing, checkpoint_interval_s).key, "checkpoint every (s)", plain},
        {K(Sealing, checkpoints).key, "checkpoints since start", plain},
        {K(Sealing, last_checkpoint_ns).key, "last checkpoint (UTC)", time_ns},
    };
    return kLines;
}

// {kind:"access_policy"} (docs/ACCESS-CONTROL.md): the read policy in force, refused or not, and
// its deny entries that deny everyone because a name did not resolve (issue 39).
const std::vector<Line>& access_policy_lines() {
    static const std::vector<Line> kLines = {
        {K(AccessPolicy, loaded_ns).key, "loaded (UTC)", time_ns},
        {K(AccessPolicy, refused).key, "refused (only root reads)", plain},
        {K(AccessPolicy, problem).key, "refused because", plain},
        {K(AccessPolicy, patterns).key, "patterns", plain},
        {K(AccessPolicy, warnings).key, "warnings (in the log)", plain},
        {K(AccessPolicy, deny_failing_closed).key, "deny entries failing closed (name not resolved)", plain},
        {K(AccessPolicy, failing_closed).key, "failing closed", plain},
    };
    return kLines;
}

// {kind:"collector"} (eventd/collector/collector.hpp): a collector's source and lag, in the
// place of the rings a host has.
const std::vector<Line>& collector_lines() {
    static const std::vector<Line> kLines = {
        {K(Collector, state).key, "state", plain},
        {K(Collector, nats_url).key, "NATS", plain},
        {K(Collector, stream).key, "stream", plain},
        {K(Collector, durable).key, "durable consumer", plain},
        {K(Collector, pending).key, "lag: messages not yet delivered", plain},
        {K(Collector, ack_pending).key, "messages delivered, not yet acknowledged", plain},
        {K(Collector, uncommitted).key, "records held by this eventd, not yet committed", plain},
        {K(Collector, received).key, "records received", plain},
        {K(Collector, messages).key, "messages received", plain},
        {K(Collector, duplicates).key, "records already stored (not stored again)", plain},
        {K(Collector, acked).key, "messages acknowledged after commit", plain},
        {K(Collector, redelivery_requested).key, "messages with failed commits (delivered again)", plain},
        {K(Collector, redelivered).key, "messages redelivered by the server", plain},
        {K(Collector, refused).key, "messages refused (not eventd records)", plain},
        {K(Collector, sessions).key, "sessions", plain},
        {K(Collector, last_received_ns).key, "last received (UTC)", time_ns},
        {K(Collector, last_error).key, "last error", plain},
    };
    return kLines;
}

// {kind:"index_policy"} (eventd/index/policy_thread.hpp): the policy's settings and last run,
// then the desired index set and the query counters as two tables.
const std::vector<Line>& index_policy_lines() {
    static const std::vector<Line> kLines = {
        {K(IndexPolicy, last_recompute_ns).key, "last recomputation (UTC)", time_ns},
        {K(IndexPolicy, interval_s).key, "interval (s)", fixed("%.0f")},
        {K(IndexPolicy, window_s).key, "window (s)", fixed("%.0f")},
        {K(IndexPolicy, create_threshold).key, "create threshold", plain},
        {K(IndexPolicy, drop_threshold).key, "drop threshold", plain},
        {K(IndexPolicy, meta_db).key, "metadata database", plain},
        {K(IndexPolicy, meta_db_problem).key, "metadata database problem", plain},
        {K(IndexPolicy, counted_fields).key, "counted fields", plain},
        {K(IndexPolicy, not_counted).key, "not counted (field cap)", plain},
    };
    return kLines;
}

std::string index_policy_section(const Json& record) {
    Json summary = record;
    const char* problem = M(IndexPolicy, meta_db_problem);
    summary.erase(M(IndexPolicy, desired));
    summary.erase(M(IndexPolicy, counters));
    if (summary.contains(problem) && summary[problem].is_null()) summary.erase(problem);
    std::string body = lines(summary, index_policy_lines());
    auto rows_of = [&](const char* key) {
        std::vector<const Json*> out;
        if (record.contains(key) && record[key].is_array())
            for (const Json& r : record[key]) out.push_back(&r);
        return out;
    };
    const auto desired = rows_of(M(IndexPolicy, desired));
    body += "\n  Desired indexes (most important first)\n";
    if (desired.empty()) {
        body += "  (none)\n";
    } else {
        body += table(desired, {{M(DesiredIndex, priority), "PRIORITY", plain},
                                {M(DesiredIndex, field), "FIELD", plain, false},
                                {M(DesiredIndex, is_expression), "PAYLOAD PATH", plain, false},
                                {M(DesiredIndex, manual), "BY INDEX", plain, false}});
    }
    const auto counters = rows_of(M(IndexPolicy, counters));
    body += "\n  Query counts in the window (most queried first)\n";
    if (counters.empty()) {
        body += "  (none)\n";
    } else {
        body += table(counters, {{M(FieldCount, field), "FIELD", plain, false},
                                 {M(FieldCount, query_count), "QUERIES", plain},
                                 {M(FieldCount, window_start_ns), "WINDOW START (UTC)", time_ns, false}});
    }
    return body;
}

}  // namespace

std::string render_status(const std::vector<Json>& records) {
    if (records.empty()) return "eventd sent no status records\n";
    std::vector<std::string> order;  // kinds in order of first appearance
    std::map<std::string, std::vector<const Json*>> by_kind;
    for (const auto& r : records) {
        const std::string kind = st::kind_of(r);
        if (by_kind[kind].empty()) order.push_back(kind);
        by_kind[kind].push_back(&r);
    }
    std::string out;
    auto section = [&](const std::string& title, const std::string& body) {
        if (!out.empty()) out += "\n";
        out += title + "\n" + body;
    };
    if (by_kind.count(st::Collector::kind)) {
        std::string body;
        for (const Json* r : by_kind[st::Collector::kind]) {
            Json shown = *r;
            const char* last_error = K(Collector, last_error).key;
            if (shown.contains(last_error) && shown[last_error].is_null()) shown.erase(last_error);
            body += lines(shown, collector_lines());
        }
        section("Collector (JetStream)", body);
    }
    if (by_kind.count(st::Ring::kind)) section("Rings (per CPU)", table(by_kind[st::Ring::kind], ring_columns()));
    if (by_kind.count(st::Shard::kind)) section("Shards", table(by_kind[st::Shard::kind], shard_columns()));
    if (by_kind.count(st::ShardIndexes::kind))
        section("Indexes (per shard)", table(by_kind[st::ShardIndexes::kind], index_columns()));
    if (by_kind.count(st::Rates::kind)) {
        std::string body;
        for (const Json* r : by_kind[st::Rates::kind]) body += lines(*r, rate_lines());
        section("Rates", body);
    }
    if (by_kind.count(st::Retention::kind)) {
        std::string body;
        for (const Json* r : by_kind[st::Retention::kind]) body += lines(*r, retention_lines());
        section("Retention", body);
    }
    if (by_kind.count(st::Sealing::kind)) {
        std::string body;
        for (const Json* r : by_kind[st::Sealing::kind]) {
            // Only what applies: a sealed store has no problem, an unsealed one no keys.
            Json shown = *r;
            for (auto it = shown.begin(); it != shown.end();) it = it->is_null() ? shown.erase(it) : std::next(it);
            if (!shown.value(K(Sealing, sealed).key, false)) shown.erase(K(Sealing, epoch_seconds).key);
            body += lines(shown, sealing_lines());
        }
        section("Sealing", body);
    }
    if (by_kind.count(st::AccessPolicy::kind)) {
        std::string body;
        for (const Json* r : by_kind[st::AccessPolicy::kind]) {
            Json shown = *r;  // a policy in force has no problem, and no list when nothing fails closed
            for (auto it = shown.begin(); it != shown.end();) it = it->is_null() ? shown.erase(it) : std::next(it);
            body += lines(shown, access_policy_lines());
        }
        section("Access policy", body);
    }
    if (by_kind.count(st::Queries::kind)) {
        std::string body;
        for (const Json* r : by_kind[st::Queries::kind]) body += lines(*r, query_lines());
        section("Queries", body);
    }
    if (by_kind.count(st::IndexPolicy::kind)) {
        std::string body;
        for (const Json* r : by_kind[st::IndexPolicy::kind]) body += index_policy_section(*r);
        section("Adaptive indexing", body);
    }
    for (const auto& kind : order) {
        if (kind == st::Collector::kind || kind == st::Ring::kind || kind == st::Shard::kind ||
            kind == st::ShardIndexes::kind || kind == st::Rates::kind || kind == st::Retention::kind ||
            kind == st::Sealing::kind || kind == st::AccessPolicy::kind || kind == st::Queries::kind ||
            kind == st::IndexPolicy::kind)
            continue;
        section(kind.empty() ? "Other" : "Other: " + plain(Json(kind)), table(by_kind[kind], {}));
    }
    return out;
}

}  // namespace eventctl
