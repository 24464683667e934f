// kmes-bench-query-store: builds the store the query benchmark reads (issue 4 "Benchmarks",
// docs/PERFORMANCE.md) — by default 10 million events in 2 shards, spread evenly over the 24
// hours before --end (default: now), ~20 event types with realistic msgpack payloads.
//
// The shards are created by store::ShardDb (the §3.1 schema, idx_events_timestamp,
// sequence_state, WAL), then filled over a plain connection in 200 000-row transactions
// with no journal, synchronous=OFF and the timestamp index dropped during the load and re-created with
// its own SQL afterwards (same file layout in the end, minutes faster). sequence_state gets
// the ranges of the rows written, so eventd can open the store as its own.
//
// Rows are deterministic for a given --seed/--events/--end. Each CPU's events go to shard
// cpu % shards (as eventd's routing with 4 CPUs and 2 shards), ids increase with time.
// A file `query-bench-store.json` records the parameters once the store is complete; a
// second run with the same parameters finds it and does nothing (use --force to rebuild).
//
//   kmes-bench-query-store --out DIR [--events N] [--shards S] [--end-ns NS] [--seed N] [--force]
#include <sqlite3.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli.hpp"
#include "synthetic_events.hpp"
#include "kmes/guid.hpp"
#include "store/event_columns.hpp"
#include "store/shard_db.hpp"

namespace fs = std::filesystem;
using bench::synthetic::kCpus;
using bench::synthetic::kPoolPerType;
using bench::synthetic::kTypes;
using nlohmann::json;

namespace {

constexpr const char* kMarker = "query-bench-store.json";
constexpr uint64_t kSpanNs = 24ull * 3600 * 1'000'000'000;
constexpr size_t kBatchRows = 200'000;

struct Options {
    fs::path out;
    uint64_t events = 10'000'000;
    uint32_t shards = 2;
    uint64_t end_ns = 0;
    uint64_t seed = 42;
    bool force = false;
};

Options parse(int argc, char** argv) {
    Options o;
    CLI::App app{
        "Builds the store kmes-bench-query reads: events spread evenly over the 24 hours before\n"
        "--end-ns, ~20 event types with realistic msgpack payloads, deterministic for given\n"
        "parameters. A second run with the same parameters finds the store complete and does nothing.",
        "kmes-bench-query-store"};
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // a repeated option: the last wins
    app.add_option("--out", o.out, "the store directory to write (required)")->type_name("DIR");
    app.add_option("--events", o.events, "number of events (at least 1)")->type_name("N")->capture_default_str();
    app.add_option("--shards", o.shards, "shard files; CPU c's events go to shard c % S")
        ->type_name("S")
        ->capture_default_str();
    app.add_option("--end-ns", o.end_ns, "end of the 24-hour span, ns since the epoch (default: now, whole seconds)")
        ->type_name("NS");
    app.add_option("--seed", o.seed, "random seed")->type_name("N")->capture_default_str();
    app.add_flag("--force", o.force, "rebuild even if a complete store with these parameters exists");
    bench::cli::parse_or_exit(app, argc, argv);
    // Checked here rather than with ->required(), which CLI11 checks before unknown options.
    if (o.out.empty()) bench::cli::usage_error(app, "--out DIR is required");
    if (o.shards == 0 || o.shards > kCpus) bench::cli::usage_error(app, "--shards must be 1 to 4");
    if (o.events == 0) bench::cli::usage_error(app, "--events must be at least 1");
    if (o.end_ns == 0) {
        o.end_ns = static_cast<uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
                .count());
        o.end_ns -= o.end_ns % 1'000'000'000;  // whole seconds: time literals name seconds
    }
    return o;
}

void check(int rc, int want, sqlite3* db, const std::string& what) {
    if (rc != want) throw std::runtime_error(what + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)));
}
void exec(sqlite3* db, const std::string& sql) {
    check(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK, db, sql);
}

struct ShardWriter {
    sqlite3* db = nullptr;
    sqlite3_stmt* insert = nullptr;
    size_t in_tx = 0;
    std::string index_sql;
};

}  // namespace

int main(int argc, char** argv) try {
    const Options o = parse(argc, argv);
    const json params = {{"events", o.events}, {"shards", o.shards}, {"end_ns", o.end_ns},
                         {"seed", o.seed},     {"span_ns", kSpanNs}, {"format", 1}};
    const fs::path marker = o.out / kMarker;
    if (!o.force && fs::exists(marker)) {
        json old = json::parse(std::ifstream(marker), nullptr, false);
        // Same size and shape (any end time): reuse it.
        if (old.is_object() && old.value("events", 0ull) == o.events && old.value("shards", 0u) == o.shards &&
            old.value("seed", 0ull) == o.seed && old.value("format", 0) == 1) {
            std::printf("store %s already built (%llu events, %u shards); --force rebuilds it\n", o.out.c_str(),
                        static_cast<unsigned long long>(o.events), o.shards);
            return 0;
        }
    }
    fs::create_directories(o.out);
    std::error_code ec;
    fs::remove(marker, ec);
    for (const auto& entry : fs::directory_iterator(o.out)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind("shard-", 0) == 0 || name.rfind("eventd-meta.db", 0) == 0) fs::remove(entry.path());
    }

    const auto started = std::chrono::steady_clock::now();
    std::vector<ShardWriter> shards(o.shards);
    for (uint32_t s = 0; s < o.shards; ++s) {
        {
            auto created = eventd::store::ShardDb::open(o.out, s);  // the store's own schema
            if (!created) throw std::runtime_error(created.error().message);
        }
        ShardWriter& w = shards[s];
        const std::string path = (o.out / eventd::store::shard_file_name(s)).string();
        check(sqlite3_open_v2(path.c_str(), &w.db, SQLITE_OPEN_READWRITE, nullptr), SQLITE_OK, w.db, "open " + path);
        // Bulk load without a journal (each row written once, not to the WAL and again at
        // checkpoint); WAL is switched back on at the end, as eventd expects it.
        exec(w.db, "PRAGMA journal_mode=DELETE");
        exec(w.db, "PRAGMA journal_mode=OFF");
        exec(w.db, "PRAGMA synchronous=OFF");
        exec(w.db, "PRAGMA cache_size=-262144");
        sqlite3_stmt* q = nullptr;
        check(sqlite3_prepare_v2(w.db, "SELECT sql FROM sqlite_master WHERE name='idx_events_timestamp'", -1, &q,
                                 nullptr),
              SQLITE_OK, w.db, "read index");
        check(sqlite3_step(q), SQLITE_ROW, w.db, "read index");
        w.index_sql = reinterpret_cast<const char*>(sqlite3_column_text(q, 0));
        sqlite3_finalize(q);
        exec(w.db, "DROP INDEX idx_events_timestamp");
        check(sqlite3_prepare_v2(w.db, eventd::store::insert_event_sql().c_str(), -1, &w.insert, nullptr), SQLITE_OK,
              w.db, "prepare insert");
        exec(w.db, "BEGIN");
    }

    std::mt19937_64 rng(o.seed);
    const bench::synthetic::Pools pools(rng);

    const uint64_t start_ns = o.end_ns - kSpanNs;
    const uint64_t reboot_at = o.events / 3;  // the first third ran under the previous boot
    uint64_t sequence[2][kCpus] = {};
    for (uint64_t i = 0; i < o.events; ++i) {
        const int boot = i < reboot_at ? 0 : 1;
        const uint32_t cpu = static_cast<uint32_t>(rng() % kCpus);
        const uint64_t ts =
            start_ns + static_cast<uint64_t>(static_cast<unsigned __int128>(kSpanNs) * i / o.events) + rng() % 1000;
        const size_t type = pools.pick_type(rng);
        const auto& payload = pools.payloads[type][rng() % kPoolPerType];
        const kmes::Guid& token = pools.tokens[rng() % pools.tokens.size()];
        const kmes::Guid& process = pools.processes[rng() % pools.processes.size()];
        ShardWriter& w = shards[cpu % o.shards];
        sqlite3_stmt* st = w.insert;
        sqlite3_bind_blob(st, 1, pools.boots[boot].data(), 16, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, static_cast<int64_t>(ts));
        sqlite3_bind_int(st, 3, static_cast<int>(cpu));
        sqlite3_bind_int64(st, 4, static_cast<int64_t>(++sequence[boot][cpu]));
        sqlite3_bind_int(st, 5, kTypes[type].origin);
        sqlite3_bind_text(st, 6, kTypes[type].name, -1, SQLITE_STATIC);
        sqlite3_bind_blob(st, 7, token.data(), 16, SQLITE_STATIC);
        sqlite3_bind_blob(st, 8, token.data(), 16, SQLITE_STATIC);
        sqlite3_bind_blob(st, 9, process.data(), 16, SQLITE_STATIC);
        if (payload.empty())
            sqlite3_bind_null(st, 10);
        else
            sqlite3_bind_blob(st, 10, payload.data(), static_cast<int>(payload.size()), SQLITE_STATIC);
        check(sqlite3_step(st), SQLITE_DONE, w.db, "insert");
        sqlite3_reset(st);
        if (++w.in_tx == kBatchRows) {
            exec(w.db, "COMMIT");
            exec(w.db, "BEGIN");
            w.in_tx = 0;
        }
        if ((i + 1) % 1'000'000 == 0) {
            std::fprintf(stderr, "  %llu M events\r", static_cast<unsigned long long>((i + 1) / 1'000'000));
        }
    }
    std::fprintf(stderr, "\n");

    for (uint32_t s = 0; s < o.shards; ++s) {
        ShardWriter& w = shards[s];
        // Every (boot, cpu) of this shard: sequences 1..last are accounted for.
        sqlite3_stmt* st = nullptr;
        check(sqlite3_prepare_v2(w.db, "INSERT INTO sequence_state VALUES (?1, ?2, 1, ?3)", -1, &st, nullptr),
              SQLITE_OK, w.db, "prepare sequence_state");
        for (int boot = 0; boot < 2; ++boot)
            for (uint32_t cpu = s; cpu < kCpus; cpu += o.shards) {
                if (sequence[boot][cpu] == 0) continue;
                sqlite3_bind_blob(st, 1, pools.boots[boot].data(), 16, SQLITE_STATIC);
                sqlite3_bind_int(st, 2, static_cast<int>(cpu));
                sqlite3_bind_int64(st, 3, static_cast<int64_t>(sequence[boot][cpu]));
                check(sqlite3_step(st), SQLITE_DONE, w.db, "insert sequence_state");
                sqlite3_reset(st);
            }
        sqlite3_finalize(st);
        exec(w.db, "COMMIT");
        sqlite3_finalize(w.insert);
        exec(w.db, w.index_sql);
        exec(w.db, "PRAGMA journal_mode=WAL");
        sqlite3_close(w.db);
    }
    std::ofstream(marker) << params.dump(2) << "\n";
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::printf("built %s: %llu events in %u shards, timestamps %llu..%llu, in %.0f s\n", o.out.c_str(),
                static_cast<unsigned long long>(o.events), o.shards, static_cast<unsigned long long>(start_ns),
                static_cast<unsigned long long>(o.end_ns), seconds);
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "kmes-bench-query-store: %s\n", e.what());
    return 1;
}
