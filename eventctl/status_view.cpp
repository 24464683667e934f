#include "status_view.hpp"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <functional>
#include <map>
#include <set>
#include <string_view>

#include "pretty_format.hpp"
#include "text_table.hpp"
#include "time_text.hpp"

namespace eventctl {
namespace {

using Render = std::function<std::string(const Json&)>;

struct Column {
    const char* key;
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
        {"cpu", "CPU", plain},
        {"capacity_bytes", "CAPACITY", bytes},
        {"fill_percent", "FILL", fixed("%.1f %%")},
        {"reader_lag_bytes", "READER LAG", bytes},
        {"last_sequence", "LAST SEQUENCE", plain},
        {"gaps", "GAPS", plain},
        {"lost_events", "LOST EVENTS", plain},
    };
    return kColumns;
}

const std::vector<Column>& shard_columns() {
    static const std::vector<Column> kColumns = {
        {"shard", "SHARD", plain},
        {"file", "FILE", plain, false},
        {"rows", "ROWS", plain},
        {"bytes", "SIZE", bytes},
        {"last_commit_ns", "LAST COMMIT (UTC)", time_ns, false},
        {"batches", "BATCHES", plain},
        {"avg_batch_size", "AVG BATCH", fixed("%.1f")},
        {"last_batch_size", "LAST BATCH", plain},
        {"commit_latency_ms", "COMMIT MS", fixed("%.2f")},
        {"failed_batches", "FAILED BATCHES", plain},
        {"lost_events", "LOST EVENTS", plain},
    };
    return kColumns;
}

// Secondary indexes per shard (PSD-008 §3.3): what exists, what the desired set still wants
// here, and what building and shedding did.
const std::vector<Column>& index_columns() {
    static const std::vector<Column> kColumns = {
        {"shard", "SHARD", plain},
        {"indexes", "INDEXES", plain, false},
        {"missing", "DESIRED, MISSING", plain, false},
        {"building", "BUILDING", plain, false},
        {"builds_done", "BUILT", plain},
        {"builds_cancelled", "CANCELLED", plain},
        {"builds_failed", "FAILED", plain},
        {"dropped", "DROPPED", plain},
        {"sheds_graduated", "SHED (GRADUATED)", plain},
        {"sheds_emergency", "SHED (EMERGENCY)", plain},
        {"restored", "RESTORED", plain},
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
    const char* key;
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
        {"events_in_per_s", "events in", per_second},
        {"events_out_per_s", "events out", per_second},
    };
    return kLines;
}

const std::vector<Line>& query_lines() {
    static const std::vector<Line> kLines = {
        {"active", "active", plain},
        {"streaming", "streaming", plain},
        {"refused_total", "refused (total)", plain},
        {"refused_concurrency", "refused: MaxConcurrentQueries", plain},
        {"refused_streaming", "refused: MaxStreamingQueries", plain},
        {"refused_per_user", "refused: MaxQueriesPerUser", plain},
        {"refused_streaming_per_user", "refused: MaxStreamingQueriesPerUser", plain},
        {"timeouts", "timed out", plain},
        {"dropped_streams", "streams dropped (slow reader)", plain},
    };
    return kLines;
}

// {kind:"retention"} (eventd/daemon_runtime.cpp): passes since eventd started.
const std::vector<Line>& retention_lines() {
    static const std::vector<Line> kLines = {
        {"runs", "passes", plain},
        {"deleted_rows", "rows deleted", plain},
        {"last_run_ns", "last pass ended (UTC)", time_ns},
    };
    return kLines;
}

// {kind:"collector"} (eventd/collector/collector.hpp): a collector's source and lag, in the
// place of the rings a host has.
const std::vector<Line>& collector_lines() {
    static const std::vector<Line> kLines = {
        {"state", "state", plain},
        {"nats_url", "NATS", plain},
        {"stream", "stream", plain},
        {"durable", "durable consumer", plain},
        {"pending", "lag: not yet delivered (records)", plain},
        {"ack_pending", "delivered, not yet acknowledged", plain},
        {"uncommitted", "held by this eventd, not yet committed", plain},
        {"received", "received", plain},
        {"duplicates", "already stored (not stored again)", plain},
        {"acked", "acknowledged after commit", plain},
        {"redelivery_requested", "failed commits (delivered again)", plain},
        {"redelivered", "redelivered by the server", plain},
        {"refused", "refused (not eventd records)", plain},
        {"sessions", "sessions", plain},
        {"last_received_ns", "last received (UTC)", time_ns},
        {"last_error", "last error", plain},
    };
    return kLines;
}

// {kind:"index_policy"} (eventd/index/policy_thread.hpp): the policy's settings and last run,
// then the desired index set and the query counters as two tables.
const std::vector<Line>& index_policy_lines() {
    static const std::vector<Line> kLines = {
        {"last_recompute_ns", "last recomputation (UTC)", time_ns},
        {"interval_s", "interval (s)", fixed("%.0f")},
        {"window_s", "window (s)", fixed("%.0f")},
        {"create_threshold", "create threshold", plain},
        {"drop_threshold", "drop threshold", plain},
        {"meta_db", "metadata database", plain},
        {"meta_db_problem", "metadata database problem", plain},
        {"counted_fields", "counted fields", plain},
        {"not_counted", "not counted (field cap)", plain},
    };
    return kLines;
}

std::string index_policy_section(const Json& record) {
    Json summary = record;
    summary.erase("desired");
    summary.erase("counters");
    if (summary.contains("meta_db_problem") && summary["meta_db_problem"].is_null()) summary.erase("meta_db_problem");
    std::string body = lines(summary, index_policy_lines());
    auto rows_of = [&](const char* key) {
        std::vector<const Json*> out;
        if (record.contains(key) && record[key].is_array())
            for (const Json& r : record[key]) out.push_back(&r);
        return out;
    };
    const auto desired = rows_of("desired");
    body += "\n  Desired indexes (most important first)\n";
    if (desired.empty()) {
        body += "  (none)\n";
    } else {
        body += table(desired, {{"priority", "PRIORITY", plain},
                                {"field", "FIELD", plain, false},
                                {"is_expression", "PAYLOAD PATH", plain, false},
                                {"manual", "BY INDEX", plain, false}});
    }
    const auto counters = rows_of("counters");
    body += "\n  Query counts in the window (most queried first)\n";
    if (counters.empty()) {
        body += "  (none)\n";
    } else {
        body += table(counters, {{"field", "FIELD", plain, false},
                                 {"query_count", "QUERIES", plain},
                                 {"window_start_ns", "WINDOW START (UTC)", time_ns, false}});
    }
    return body;
}

std::string kind_of(const Json& r) {
    auto it = r.find("kind");
    return it != r.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

std::string render_status(const std::vector<Json>& records) {
    if (records.empty()) return "eventd sent no status records\n";
    std::vector<std::string> order;  // kinds in order of first appearance
    std::map<std::string, std::vector<const Json*>> by_kind;
    for (const auto& r : records) {
        const std::string kind = kind_of(r);
        if (by_kind[kind].empty()) order.push_back(kind);
        by_kind[kind].push_back(&r);
    }
    std::string out;
    auto section = [&](const std::string& title, const std::string& body) {
        if (!out.empty()) out += "\n";
        out += title + "\n" + body;
    };
    if (by_kind.count("collector")) {
        std::string body;
        for (const Json* r : by_kind["collector"]) {
            Json shown = *r;
            if (shown.contains("last_error") && shown["last_error"].is_null()) shown.erase("last_error");
            body += lines(shown, collector_lines());
        }
        section("Collector (JetStream)", body);
    }
    if (by_kind.count("ring")) section("Rings (per CPU)", table(by_kind["ring"], ring_columns()));
    if (by_kind.count("shard")) section("Shards", table(by_kind["shard"], shard_columns()));
    if (by_kind.count("shard_indexes"))
        section("Indexes (per shard)", table(by_kind["shard_indexes"], index_columns()));
    if (by_kind.count("rates")) {
        std::string body;
        for (const Json* r : by_kind["rates"]) body += lines(*r, rate_lines());
        section("Rates", body);
    }
    if (by_kind.count("retention")) {
        std::string body;
        for (const Json* r : by_kind["retention"]) body += lines(*r, retention_lines());
        section("Retention", body);
    }
    if (by_kind.count("queries")) {
        std::string body;
        for (const Json* r : by_kind["queries"]) body += lines(*r, query_lines());
        section("Queries", body);
    }
    if (by_kind.count("index_policy")) {
        std::string body;
        for (const Json* r : by_kind["index_policy"]) body += index_policy_section(*r);
        section("Adaptive indexing", body);
    }
    for (const auto& kind : order) {
        if (kind == "collector" || kind == "ring" || kind == "shard" || kind == "shard_indexes" || kind == "rates" ||
            kind == "retention" || kind == "queries" || kind == "index_policy")
            continue;
        section(kind.empty() ? "Other" : "Other: " + plain(Json(kind)), table(by_kind[kind], {}));
    }
    return out;
}

}  // namespace eventctl
