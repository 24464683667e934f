// kmes-bench-query: eventd's query path end to end against hand-written SQL on the same files
// (issue 4 "Benchmarks", docs/PERFORMANCE.md).
//
// The store is one built by kmes-bench-query-store (10 M events, 2 shards by default). Each
// case is one client process per run, timed in wall time from spawn to exit, output to a file:
//   eventd side: `eventctl --socket S --format jsonl 'QUERY'` — connect, query, receive every
//                record, spool, write JSON lines;
//   SQL side:    `sqlite3 -readonly -json shard-0000.db 'ATTACH …' 'SQL'` — one process that
//                opens every shard and runs the query a person would write for two files:
//                per-shard ORDER BY/LIMIT or GROUP BY in a UNION ALL, merged by an outer
//                ORDER BY / GROUP BY (the same push-down and merge eventd does), GUIDs and the
//                payload printed as hex (the CLI cannot decode msgpack). For a payload field
//                the CLI loads msgpack_extract from query_bench_sqlite_ext (the store's own
//                function), so both sides run the same decoding.
// Runs alternate eventd/SQL after one warm-up of each (page cache warm: both read the same
// pages); the ratio is the median of the ratios of neighbouring runs. The record counts of
// both sides are compared and printed: a mismatch marks the row.
//
// Without --socket it starts kmes-shimd and eventd on the store (StorageShards = the store's
// shard count, QueryTimeoutMs 300000); eventd's own startup events then belong to the store,
// and both sides see them.
//
//   kmes-bench-query --store DIR [--socket PATH] [--runs N] [--quick] [--only NAME]…
//                    [--eventctl PATH] [--eventd PATH] [--shimd PATH] [--sqlite3 PATH] [--ext PATH]
//                    [--sql-only]   (only the SQL side: checks the store and the SQL without eventd)
//   cases: take100, since-1m, count-by-type, payload-where
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cli.hpp"
#include "eventd_process.hpp"
#include "harness.hpp"
#include "shim_process.hpp"
#include "store/shard_catalog.hpp"

#ifndef KMES_BENCH_EVENTCTL
#define KMES_BENCH_EVENTCTL "eventctl"
#endif
#ifndef KMES_BENCH_EVENTD
#define KMES_BENCH_EVENTD "eventd"
#endif
#ifndef KMES_BENCH_SHIMD
#define KMES_BENCH_SHIMD "kmes-shimd"
#endif
#ifndef KMES_BENCH_QUERY_EXT
#define KMES_BENCH_QUERY_EXT "query_bench_sqlite_ext"
#endif

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct Options {
    fs::path store;
    std::string socket;
    std::string eventctl = KMES_BENCH_EVENTCTL;
    std::string eventd = KMES_BENCH_EVENTD;
    std::string shimd = KMES_BENCH_SHIMD;
    std::string sqlite3 = "/usr/bin/sqlite3";
    std::string ext = KMES_BENCH_QUERY_EXT;
    int runs = 5;
    bool sql_only = false;  // check the store and the SQL side without eventd
    std::vector<std::string> only;
    std::string index;  // --index FIELD: the adaptive-index comparison instead (issue 10)
};

// The cases of make_cases, for --only.
const std::vector<std::string> kCaseNames{"take100", "since-1m", "count-by-type", "payload-where"};

Options parse(int argc, char** argv) {
    Options o;
    CLI::App app{
        "Times eventctl end to end against the sqlite3 CLI running the same queries on the same store\n"
        "(one built by kmes-bench-query-store). Without --socket it starts kmes-shimd and eventd on\n"
        "the store.",
        "kmes-bench-query"};
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // a repeated option: the last wins
    app.add_option("--store", o.store, "the store to query (required; build one with kmes-bench-query-store)")
        ->type_name("DIR");
    app.add_option("--socket", o.socket, "query an eventd already running on this query socket instead of starting one")
        ->type_name("PATH");
    app.add_option_function<int>(
           "--runs", [&o](int runs) { o.runs = std::max(1, runs); },
           "timed runs per query and side (default 5; at least 1)")
        ->type_name("N")
        ->trigger_on_parse();
    bench::cli::add_run_length(
        app, [&o] { o.runs = 2; }, "short run: 2 runs per query", nullptr,
        "accepted and ignored (scripts/bench passes it to every benchmark; --runs sets the length here)");
    app.add_option("--only", o.only, "run only this query (repeatable; default: all)")
        ->type_name("NAME")
        ->check(CLI::IsMember(kCaseNames))
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
        ->allow_extra_args(false);
    app.add_flag("--sql-only", o.sql_only, "only the SQL side: checks the store and the SQL without eventd");
    app.add_option("--index", o.index,
                   "instead: time selective queries on FIELD (FIELD == 'mallory'), then EVENTS INDEX FIELD, wait "
                   "until every shard has built it, and time them again (the store keeps the index and an "
                   "eventd-meta.db: run it on a copy)")
        ->type_name("FIELD");
    app.add_option("--eventctl", o.eventctl, "eventctl binary")->type_name("PATH")->capture_default_str();
    app.add_option("--eventd", o.eventd, "eventd binary")->type_name("PATH")->capture_default_str();
    app.add_option("--shimd", o.shimd, "kmes-shimd binary")->type_name("PATH")->capture_default_str();
    app.add_option("--sqlite3", o.sqlite3, "sqlite3 CLI")->type_name("PATH")->capture_default_str();
    app.add_option("--ext", o.ext, "SQLite extension with msgpack_extract (query_bench_sqlite_ext)")
        ->type_name("PATH")
        ->capture_default_str();
    bench::cli::parse_or_exit(app, argc, argv);
    // Checked here rather than with ->required(), which CLI11 checks before unknown options.
    if (o.store.empty())
        bench::cli::usage_error(app, "--store DIR is required (build one with kmes-bench-query-store)");
    return o;
}

// --- processes ----------------------------------------------------------------------------

struct RunResult {
    double seconds = 0;
    int status = 0;
    std::string output;  // stdout file path
};

// Spawn argv with stdout → out, stderr → err; wall time from spawn to exit.
RunResult run_process(const std::vector<std::string>& args, const std::string& out, const std::string& err) {
    std::vector<std::string> copy = args;
    std::vector<char*> argv;
    for (std::string& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = -1;
    const auto start = std::chrono::steady_clock::now();
    const int rc = posix_spawn(&pid, copy[0].c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) throw std::runtime_error("cannot start " + copy[0] + ": " + std::strerror(rc));
    int status = 0;
    waitpid(pid, &status, 0);
    RunResult r;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.output = out;
    return r;
}

std::string slurp(const std::string& path, size_t limit = 2000) {
    std::ifstream in(path);
    std::string s((std::istreambuf_iterator<char>(in)), {});
    if (s.size() > limit) s = s.substr(0, limit) + "…";
    return s;
}

// Records in a jsonl file / rows in a `sqlite3 -json` file: lines holding an object.
uint64_t count_records(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    uint64_t n = 0;
    while (std::getline(in, line))
        if (line.find('{') != std::string::npos) ++n;
    return n;
}

// --- the store ------------------------------------------------------------------------------

// End of the generated data: the marker's end_ns, else the newest timestamp in the store.
int64_t store_end_ns(const Options& o, const std::vector<eventd::store::ShardFile>& files) {
    json marker = json::parse(std::ifstream(o.store / "query-bench-store.json"), nullptr, false);
    if (marker.is_object() && marker.contains("end_ns")) return marker["end_ns"].get<int64_t>();
    int64_t end = 0;
    for (const auto& f : files) {
        auto conn = eventd::store::ReadConnection::open(f.path);
        if (!conn) throw std::runtime_error(conn.error().message);
        sqlite3_stmt* st = nullptr;
        sqlite3_prepare_v2(conn->get(), "SELECT max(timestamp) FROM events", -1, &st, nullptr);
        if (sqlite3_step(st) == SQLITE_ROW) end = std::max<int64_t>(end, sqlite3_column_int64(st, 0));
        sqlite3_finalize(st);
    }
    return end;
}

std::string iso_utc(int64_t ns) {
    const time_t t = static_cast<time_t>(ns / 1'000'000'000);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    return buf;
}

// --- cases ----------------------------------------------------------------------------------

struct Case {
    std::string name;
    std::string query;  // eventd
    std::string sql;    // sqlite3 CLI, over main (shard 0) and s1… (the others, attached)
    bool needs_ext = false;
};

constexpr const char* kRawColumns =
    "boot_id, timestamp, cpu_id, sequence, origin_class, event_type, effective_token_guid, true_token_guid, "
    "process_guid, payload";
constexpr const char* kHexColumns =
    "hex(boot_id) AS boot_id, timestamp, cpu_id, sequence, origin_class, event_type, "
    "hex(effective_token_guid) AS effective_token_guid, hex(true_token_guid) AS true_token_guid, "
    "hex(process_guid) AS process_guid, hex(payload) AS payload";

std::string schema_name(size_t i) { return i == 0 ? "main" : "s" + std::to_string(i); }

// UNION ALL of `per_shard` (with {S} replaced by each shard's schema name).
std::string union_all(size_t shards, const std::string& per_shard) {
    std::string out;
    for (size_t i = 0; i < shards; ++i) {
        std::string part = per_shard;
        for (size_t at; (at = part.find("{S}")) != std::string::npos;) part.replace(at, 3, schema_name(i));
        if (i) out += " UNION ALL ";
        out += "SELECT * FROM (" + part + ")";
    }
    return out;
}

std::vector<Case> make_cases(size_t shards, int64_t end_ns) {
    const int64_t since = end_ns - 60'000'000'000;
    const std::string raw = kRawColumns, hex = kHexColumns;
    std::vector<Case> cases;
    cases.push_back({"take100", "EVENTS TAKE 100",
                     "SELECT " + hex + " FROM (" +
                         union_all(shards, "SELECT " + raw + " FROM {S}.events ORDER BY timestamp DESC LIMIT 100") +
                         ") ORDER BY timestamp DESC LIMIT 100;"});
    cases.push_back({"since-1m", "EVENTS SINCE " + iso_utc(since) + " UNTIL " + iso_utc(end_ns),
                     "SELECT " + hex + " FROM (" +
                         union_all(shards, "SELECT " + raw + " FROM {S}.events WHERE timestamp >= " +
                                               std::to_string(since) + " AND timestamp <= " + std::to_string(end_ns)) +
                         ") ORDER BY timestamp DESC;"});
    cases.push_back({"count-by-type", "EVENTS COUNT BY event_type",
                     "SELECT event_type, sum(n) AS count FROM (" +
                         union_all(shards, "SELECT event_type, count(*) AS n FROM {S}.events GROUP BY event_type") +
                         ") GROUP BY event_type ORDER BY count DESC, event_type;"});
    cases.push_back({"payload-where", "EVENTS WHERE user == 'mallory'",
                     "SELECT " + hex + " FROM (" +
                         union_all(shards, "SELECT " + raw +
                                               " FROM {S}.events WHERE msgpack_extract(payload, '$.user') = 'mallory' "
                                               "COLLATE NOCASE") +
                         ") ORDER BY timestamp DESC;",
                     true});
    return cases;
}

struct Side {
    std::vector<double> seconds;
    uint64_t records = 0;
};

// --- --index: the same queries without and with the adaptive index (issue 10) ----------------

// Waits until every active shard lists `index_name` in STATUS; returns the seconds it took.
double wait_for_index(const Options& o, const std::string& socket, const std::string& out_dir,
                      const std::string& index_name, uint32_t shards) {
    const auto start = std::chrono::steady_clock::now();
    const std::vector<std::string> args{o.eventctl, "--socket", socket, "--format", "jsonl", "STATUS"};
    for (;;) {
        const RunResult r = run_process(args, out_dir + "/status.out", out_dir + "/stderr");
        uint32_t built = 0;
        std::ifstream in(r.output);
        for (std::string line; std::getline(in, line);) {
            const json rec = json::parse(line, nullptr, false);
            if (rec.is_object() && rec.value("kind", "") == "shard_indexes" &&
                rec.value("indexes", "").find(index_name) != std::string::npos)
                ++built;
        }
        const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (built >= shards) return waited;
        if (waited > 3600) throw std::runtime_error("the index was not built within an hour");
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
}

// Wall times of `runs` runs of eventctl QUERY (after one warm-up), and its record count.
Side time_query(const Options& o, const std::string& socket, const std::string& out_dir, const std::string& query) {
    const std::vector<std::string> args{o.eventctl, "--socket", socket, "--format", "jsonl", query};
    Side side;
    for (int run = -1; run < o.runs; ++run) {
        const RunResult r = run_process(args, out_dir + "/eventctl.out", out_dir + "/stderr");
        if (r.status != 0)
            throw std::runtime_error(query + ": eventctl exited " + std::to_string(r.status) + ": " +
                                     slurp(out_dir + "/stderr"));
        if (run < 0) {
            side.records = count_records(r.output);
            continue;
        }
        side.seconds.push_back(r.seconds);
    }
    return side;
}

void compare_with_index(const Options& o, const std::string& socket, const std::string& out_dir, uint32_t shards) {
    const std::string field = o.index;
    const std::vector<std::string> queries = {"EVENTS WHERE " + field + " == 'mallory' TAKE 100",
                                              "EVENTS WHERE " + field + " == 'mallory' COUNT",
                                              "EVENTS WHERE " + field + " == 'mallory'"};
    std::vector<Side> without;
    for (const std::string& q : queries) without.push_back(time_query(o, socket, out_dir, q));

    const RunResult index = run_process({o.eventctl, "--socket", socket, "EVENTS INDEX " + field},
                                        out_dir + "/index.out", out_dir + "/stderr");
    if (index.status != 0) throw std::runtime_error("EVENTS INDEX failed: " + slurp(out_dir + "/stderr"));
    const double build_s = wait_for_index(o, socket, out_dir, "idx_events_payload_" + field, shards);

    bench::Table table({"query", "records", "no index ms (median)", "with index ms (median)", "speed-up"});
    for (size_t i = 0; i < queries.size(); ++i) {
        const Side with = time_query(o, socket, out_dir, queries[i]);
        const double before = bench::median(without[i].seconds), after = bench::median(with.seconds);
        const std::string records =
            with.records == without[i].records
                ? std::to_string(with.records)
                : std::to_string(with.records) + " (without: " + std::to_string(without[i].records) + "!)";
        table.add({"`" + queries[i] + "`", records, bench::fmt("%.1f", before * 1e3), bench::fmt("%.1f", after * 1e3),
                   bench::fmt("%.0fx", before / after)});
    }
    std::printf("\nEVENTS INDEX %s: built in all %u shards %.1f s later (the writers build in quiet periods)\n",
                field.c_str(), shards, build_s);
    table.print("Adaptive index on `" + field + "`: eventctl end to end, " + std::to_string(o.runs) +
                " runs per side after a warm-up (median)");
}

}  // namespace

int main(int argc, char** argv) try {
    const Options o = parse(argc, argv);
    auto listed = eventd::store::list_shard_files(o.store);
    if (!listed) throw std::runtime_error(listed.error().message);
    const std::vector<eventd::store::ShardFile> files = *listed;
    if (files.empty())
        throw std::runtime_error("no shard files in " + o.store.string() + " (run kmes-bench-query-store)");
    uint32_t active = 0;
    for (const auto& f : files)
        if (f.active_index) active = std::max(active, *f.active_index + 1);
    const int64_t end_ns = store_end_ns(o, files);

    std::unique_ptr<bench::ShimProcess> shim;
    std::unique_ptr<bench::EventdProcess> eventd;
    std::string socket = o.socket;
    if (socket.empty() && !o.sql_only) {
        shim = std::make_unique<bench::ShimProcess>(o.shimd);
        bench::EventdSettings settings;
        settings.binary = o.eventd;
        settings.kmes_socket = shim->socket();
        settings.parent_dir = "/tmp";
        settings.store_dir = fs::absolute(o.store).string();
        settings.storage_shards = active;
        settings.event_retention_days = 3650;
        settings.query_timeout_ms = 300000;
        settings.ready_timeout_s = 60;
        eventd = std::make_unique<bench::EventdProcess>(settings);
        socket = eventd->query_socket();
    }

    char tmpl[] = "/tmp/kmes-bench-query-out-XXXXXX";
    if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
    const std::string out_dir = tmpl;
    const std::string err_file = out_dir + "/stderr";
    if (!o.index.empty()) {
        if (socket.empty()) throw std::runtime_error("--index needs eventd (not --sql-only)");
        compare_with_index(o, socket, out_dir, active);
        std::error_code ec;
        fs::remove_all(out_dir, ec);
        return 0;
    }

    std::vector<std::string> sql_base{o.sqlite3, "-readonly", "-json", files[0].path.string()};
    for (size_t i = 1; i < files.size(); ++i)
        sql_base.push_back("ATTACH '" + files[i].path.string() + "' AS " + schema_name(i) + ";");

    bench::Table table({"query", "records", "eventctl ms (median)", "sqlite3 ms (median)", "eventctl / sqlite3"});
    for (const Case& c : make_cases(files.size(), end_ns)) {
        if (!o.only.empty() && std::find(o.only.begin(), o.only.end(), c.name) == o.only.end()) continue;
        const std::vector<std::string> ev_args{o.eventctl, "--socket", socket, "--format", "jsonl", c.query};
        std::vector<std::string> sql_args = sql_base;
        if (c.needs_ext) sql_args.insert(sql_args.begin() + 4, ".load " + o.ext);
        sql_args.push_back(c.sql);

        Side ev, sql;
        std::vector<double> ratios;
        for (int run = -1; run < o.runs; ++run) {  // run -1: warm-up, not counted
            RunResult a;
            if (!o.sql_only) {
                a = run_process(ev_args, out_dir + "/eventctl.out", err_file);
                if (a.status != 0)
                    throw std::runtime_error(c.name + ": eventctl exited " + std::to_string(a.status) + ": " +
                                             slurp(err_file));
                if (run < 0) ev.records = count_records(a.output);
            }
            const RunResult b = run_process(sql_args, out_dir + "/sqlite3.out", err_file);
            if (b.status != 0)
                throw std::runtime_error(c.name + ": sqlite3 exited " + std::to_string(b.status) + ": " +
                                         slurp(err_file));
            if (run < 0) sql.records = count_records(b.output);
            if (run < 0) continue;
            sql.seconds.push_back(b.seconds);
            if (o.sql_only) continue;
            ev.seconds.push_back(a.seconds);
            ratios.push_back(a.seconds / b.seconds);
        }
        if (o.sql_only) {
            table.add({"`" + c.query + "`", std::to_string(sql.records), "-",
                       bench::fmt("%.1f", bench::median(sql.seconds) * 1e3), "-"});
            continue;
        }
        const std::string records = ev.records == sql.records
                                        ? std::to_string(ev.records)
                                        : std::to_string(ev.records) + " (SQL " + std::to_string(sql.records) + "!)";
        table.add({"`" + c.query + "`", records, bench::fmt("%.1f", bench::median(ev.seconds) * 1e3),
                   bench::fmt("%.1f", bench::median(sql.seconds) * 1e3), bench::fmt("%.2fx", bench::median(ratios))});
    }
    std::error_code ec;
    fs::remove_all(out_dir, ec);
    if (eventd) eventd->stop();  // SIGTERM: leave the shared store cleanly checkpointed

    table.print("Queries on " + o.store.string() + " (" + std::to_string(files.size()) +
                " shard files): eventctl end to end against the sqlite3 CLI, " + std::to_string(o.runs) +
                " runs each, alternating; ratio = median of neighbouring runs");
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "kmes-bench-query: %s\n", e.what());
    return 1;
}
