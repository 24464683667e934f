// Benchmark 5 (docs/PERFORMANCE.md §5): eventd end to end — a real kmes-shimd, a real eventd
// on a temporary store on disk, events emitted through libkmes, and the store read back over
// read-only SQLite connections, as a query would. Four parts (--only PART, repeatable):
//
//   throughput  persisted events/s draining a backlog: the rings (--capacity-mib, 64 MiB) are
//               filled first with eventd not running, then eventd starts on a fresh store and
//               the benchmark polls the committed row count every 5 ms until every event is
//               in. Rate over the 10 %→90 % stretch (no start-up, no tail). Side by side, in
//               the same run, alternating: the bare SQLite loop (sqlite_floor.hpp) over the
//               same number of rows with eventd's own mean batch size (from its SIGQUIT
//               dump). StorageShards 1 (both CPUs into shard 0) against one loop;
//               StorageShards = CPUs against one loop per shard in parallel threads.
//   sustained   live emission at a steady offered rate (paced_emitter.hpp) into the default
//               4 MiB rings (--live-capacity-mib) for --time seconds, climbing a ladder of
//               rates relative to the measured throughput until the first trial with a gap,
//               then bisecting twice; reports the highest offered rate that ended with zero
//               gaps and exact accounting.
//   latency     emit-to-commit latency at low offered rates: emit timestamp = the row's
//               `timestamp` (the shim's CLOCK_REALTIME at the ring write); commit time = when
//               a reader polling every 1 ms first sees the row. Upper bound by up to one poll
//               period plus one query.
//   rss         eventd's resident memory every second under a steady load (--rss-rate
//               events/s for --rss-time seconds).
//   index       issue 10, "ingest at saturation while an index build is pending or running":
//               the throughput drain (StorageShards 1) into a store whose shard already holds
//               2 M rows with a `user` payload field, alternately with no index work and with
//               `EVENTS INDEX user` sent as soon as eventd is ready — the writer, busy with the
//               backlog, keeps the build pending, and any build it starts in a gap is cancelled
//               by the pressure. Same backlog, same run; rate ratio and gap records compared.
//
// Run as root (the per-process emit rate limit would cap a non-root emitter). The store goes
// to --store-dir (default /var/tmp): it must be a real disk, since synchronous=FULL on tmpfs
// costs nothing.
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "eventd_process.hpp"
#include "harness.hpp"
#include "kmes/kmes.h"
#include "kmes/ring_reader.hpp"
#include "paced_emitter.hpp"
#include "shim_process.hpp"
#include <sqlite3.h>

#include "sqlite_floor.hpp"
#include "store/shard_db.hpp"
#include "store_probe.hpp"

#ifndef KMES_BENCH_EVENTCTL
#define KMES_BENCH_EVENTCTL "eventctl"
#endif

namespace {

using Clock = std::chrono::steady_clock;
const std::string kType = "bench.eventd";

constexpr const char* kUsage =
    "kmes-bench-eventd: eventd end to end against a bare SQLite loop (docs/PERFORMANCE.md §5)\n"
    "  --only PART            throughput | sustained | latency | rss (repeatable; default all four) | index\n"
    "  --quick                short runs: 16 MiB backlog, 1 rep, 3 s trials, 10 s RSS\n"
    "  --time S               seconds per sustained trial (default 10; latency max(S, 10))\n"
    "  --reps N               backlog runs per configuration (default 3)\n"
    "  --capacity-mib N       ring size for the backlog (default 64)\n"
    "  --live-capacity-mib N  ring size for the sustained trials (default 4)\n"
    "  --shards N --rate R    sustained: only StorageShards N; one trial at R events/s\n"
    "  --rss-time S           RSS run length (default 60)    --rss-rate R  events/s (default 20000)\n"
    "  --store-dir DIR        parent of the temporary stores (default /var/tmp; not tmpfs)\n"
    "  --eventd PATH          eventd binary                --shimd PATH  kmes-shimd binary\n"
    "  --eventctl PATH        eventctl binary (the index part sends EVENTS INDEX)\n";

struct Options {
    bool quick = false;
    double live_time = 10;     // seconds per sustained-rate trial
    double latency_time = 20;  // seconds per latency rate
    double rss_time = 60;
    double rss_rate = 20000;         // events/s, all CPUs together
    uint64_t capacity_mib = 64;      // rings for the backlog drain
    uint64_t live_capacity_mib = 4;  // rings for the sustained-rate trials (the production default)
    uint32_t shards = 0;             // sustained: only this StorageShards (0: 1 and the CPU count)
    double rate = 0;                 // sustained: one trial at this total rate instead of the ladder
    int reps = 3;
    std::string store_parent = "/var/tmp";
    std::set<std::string> parts;
    std::string eventd = KMES_BENCH_EVENTD;
    std::string shimd = KMES_BENCH_SHIMD;
    std::string eventctl = KMES_BENCH_EVENTCTL;

    static Options parse(int argc, char** argv) {
        Options o;
        for (int i = 1; i < argc; ++i) {
            const std::string a = argv[i];
            auto value = [&]() -> std::string {
                if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
                return argv[++i];
            };
            if (a == "--quick") {
                o.quick = true;
                o.live_time = 3;
                o.latency_time = 5;
                o.rss_time = 10;
                o.capacity_mib = 16;
                o.reps = 1;
            } else if (a == "--time") {
                o.live_time = std::stod(value());
                o.latency_time = std::max(o.live_time, 10.0);
            } else if (a == "--rss-time")
                o.rss_time = std::stod(value());
            else if (a == "--rss-rate")
                o.rss_rate = std::stod(value());
            else if (a == "--capacity-mib")
                o.capacity_mib = std::stoull(value());
            else if (a == "--live-capacity-mib")
                o.live_capacity_mib = std::stoull(value());
            else if (a == "--shards")
                o.shards = uint32_t(std::stoul(value()));
            else if (a == "--rate")
                o.rate = std::stod(value());
            else if (a == "--reps")
                o.reps = std::stoi(value());
            else if (a == "--store-dir")
                o.store_parent = value();
            else if (a == "--only")
                o.parts.insert(value());
            else if (a == "--eventd")
                o.eventd = value();
            else if (a == "--shimd")
                o.shimd = value();
            else if (a == "--eventctl")
                o.eventctl = value();
            else if (a == "-h" || a == "--help") {
                std::printf("%s", kUsage);
                std::exit(0);
            } else
                throw std::runtime_error("unknown argument " + a + " (try --help)");
        }
        // `index` belongs to ./scripts/bench index (index-ingest), not to the eventd set.
        if (o.parts.empty()) o.parts = {"throughput", "sustained", "latency", "rss"};
        return o;
    }
    bool wants(const char* part) const { return parts.count(part) != 0; }
};

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

uint64_t realtime_ns() {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
}

// Rings of the running shim (kmes_attach until EINVAL) and the capacity of each.
std::vector<uint64_t> ring_capacities() {
    std::vector<uint64_t> caps;
    for (uint32_t cpu = 0;; ++cpu) {
        uint64_t cap = 0;
        const int fd = kmes_attach(cpu, &cap);
        if (fd < 0) break;
        close(fd);
        caps.push_back(cap);
    }
    return caps;
}

std::string filesystem_of(const std::string& dir) {
    struct statfs fs {};
    if (statfs(dir.c_str(), &fs) != 0) return "unknown";
    switch (static_cast<unsigned long>(fs.f_type)) {
        case 0xEF53:
            return "ext4";
        case 0x01021994:
            return "tmpfs (fsync is free: numbers are NOT disk numbers)";
        case 0x58465342:
            return "xfs";
        case 0x9123683E:
            return "btrfs";
        case 0x794c7630:
            return "overlayfs";
        default: {
            char buf[32];
            std::snprintf(buf, sizeof buf, "fs type 0x%lx", static_cast<unsigned long>(fs.f_type));
            return buf;
        }
    }
}

// Rows per second between the points where `progress` (time, rows) first reaches 10 % and
// 90 % of `total`.
double window_rate(const std::vector<std::pair<double, uint64_t>>& progress, uint64_t total) {
    const std::pair<double, uint64_t>*a = nullptr, *b = nullptr;
    for (const auto& p : progress) {
        if (!a && p.second >= total / 10) a = &p;
        if (!b && p.second >= total * 9 / 10) b = &p;
    }
    if (!a || !b || b->first <= a->first) return 0;
    return double(b->second - a->second) / (b->first - a->first);
}

std::string percent(double part, double whole) { return bench::fmt("%.0f %%", 100 * part / whole); }
std::string k_per_s(double v) { return bench::fmt("%.1f k", v / 1e3); }

// A kmes-shimd with rings of `capacity_mib` (the default 4 MiB needs no configuration; any
// other size is a BufferCapacity the shim applies at registry time by a ring swap, which is
// waited for, so eventd attaches the final rings).
std::unique_ptr<bench::ShimProcess> start_shim(const Options& o, uint64_t capacity_mib) {
    if (capacity_mib == 4) return std::make_unique<bench::ShimProcess>(o.shimd);
    const uint64_t capacity = capacity_mib << 20;
    const std::string config = o.store_parent + "/eventd-bench-kmes.json";
    std::ofstream(config) << "{\"BufferCapacity\": " << capacity << "}\n";
    auto shim = std::make_unique<bench::ShimProcess>(o.shimd, std::vector<std::string>{}, config);
    for (const auto deadline = Clock::now() + std::chrono::seconds(10);;) {
        const std::vector<uint64_t> caps = ring_capacities();
        if (!caps.empty() && std::all_of(caps.begin(), caps.end(), [&](uint64_t c) { return c == capacity; })) break;
        if (Clock::now() > deadline) throw std::runtime_error("the shim did not switch to the configured capacity");
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::filesystem::remove(config);
    return shim;
}

// ---------------------------------------------------------------- throughput (backlog drain)

struct DrainRun {
    double rate = 0;             // rows/s, 10 %→90 %
    double seconds = 0;          // READY → last row visible
    double cpu = 0;              // eventd CPU seconds per wall second over the drain
    double mean_batch = 0;       // rows per committed transaction (SIGQUIT dump)
    double startup = 0;          // spawn → READY=1
    double bytes_per_event = 0;  // shard files after the shutdown (WAL checkpointed) / events
    bool exact = false;          // every event stored once, no gap, accounting holds
    // Index work during the drain (STATUS shard_indexes of shard 0, read at its end).
    uint64_t builds_started = 0, builds_cancelled = 0, builds_done = 0;
};

// The STATUS record {kind: "shard_indexes"} of shard 0, through eventctl.
nlohmann::json shard0_indexes(const std::string& eventctl, const std::string& socket) {
    const std::string command = eventctl + " --socket " + socket + " --format jsonl STATUS";
    FILE* out = ::popen(command.c_str(), "r");
    if (!out) return {};
    std::string text;
    char buffer[4096];
    for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, out)) > 0;) text.append(buffer, n);
    ::pclose(out);
    size_t start = 0;
    for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
        const auto rec = nlohmann::json::parse(text.substr(start, end - start), nullptr, false);
        if (rec.is_object() && rec.value("kind", "") == "shard_indexes" && rec.value("shard", -1) == 0) return rec;
    }
    return {};
}

uint64_t store_bytes(const std::string& store) {
    uint64_t total = 0;
    for (const auto& file : bench::shard_files(store)) total += std::filesystem::file_size(file);
    return total;
}

// What a drain starts from besides the backlog (the index part): a store directory already
// holding `prefilled` rows (none: a fresh store), and a field to send EVENTS INDEX for once
// eventd is ready.
struct DrainSetup {
    std::string store_dir;
    uint64_t prefilled = 0;
    std::string index_field;
};

DrainRun drain_backlog(const Options& o, const std::string& kmes_socket, uint32_t shards, uint64_t events,
                       const DrainSetup& setup = {}) {
    bench::EventdSettings s;
    s.binary = o.eventd;
    s.kmes_socket = kmes_socket;
    s.parent_dir = o.store_parent;
    s.store_dir = setup.store_dir;
    s.storage_shards = shards;
    bench::EventdProcess eventd(s);
    if (!setup.index_field.empty()) {
        const std::string index =
            o.eventctl + " --socket " + eventd.query_socket() + " 'EVENTS INDEX " + setup.index_field + "' > /dev/null";
        if (std::system(index.c_str()) != 0) throw std::runtime_error("EVENTS INDEX failed");
    }
    bench::StoreWatch watch(eventd.store());
    const double cpu_before = bench::cpu_seconds_of(eventd.pid());
    const auto start = Clock::now();
    std::vector<std::pair<double, uint64_t>> progress;
    for (;;) {
        const uint64_t rows = watch.rows() - setup.prefilled;
        progress.emplace_back(since(start), rows);
        if (rows >= events + 1) break;  // + synthetic.startup
        if (since(start) > 300) throw std::runtime_error("eventd did not store the backlog within 300 s");
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    DrainRun run;
    run.seconds = since(start);
    run.cpu = (bench::cpu_seconds_of(eventd.pid()) - cpu_before) / run.seconds;
    run.rate = window_rate(progress, events);
    run.startup = eventd.startup_seconds();
    if (!setup.index_field.empty()) {
        const auto status = shard0_indexes(o.eventctl, eventd.query_socket());
        run.builds_started = status.value("builds_started", uint64_t{0});
        run.builds_cancelled = status.value("builds_cancelled", uint64_t{0});
        run.builds_done = status.value("builds_done", uint64_t{0});
    }
    eventd.stop(SIGQUIT);
    uint64_t rows = 0, batches = 0;
    for (const auto& [shard, d] : eventd.shard_dump()) {
        rows += d.rows;
        batches += d.batches;
    }
    run.mean_batch = batches ? double(rows) / double(batches) : 0;
    const auto summary = bench::StoreSummary::of(eventd.store());
    run.exact = summary.events() == events && summary.gap_records() == 0 && summary.accounted();
    run.bytes_per_event = double(store_bytes(eventd.store())) / double(events);
    return run;
}

// ---------------------------------------------------------------- index build pending (issue 10)

constexpr uint64_t kIndexPrefillRows = 2'000'000;

// A fresh store directory whose shard 0 holds `rows` rows of no KMES boot (sequence NULL, so
// the accounting checks ignore them) with payloads {"user": "uNNNNNN"}: one SQL statement.
std::string prefilled_store(const Options& o, uint64_t rows) {
    char tmpl[4096];
    std::snprintf(tmpl, sizeof tmpl, "%s/kmes-bench-index-store-XXXXXX", o.store_parent.c_str());
    if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp in " + o.store_parent + " failed");
    const std::string dir = tmpl;
    if (!eventd::store::ShardDb::open(dir, 0)) throw std::runtime_error("cannot create a shard in " + dir);
    sqlite3* db = nullptr;
    sqlite3_open((dir + "/shard-0000.db").c_str(), &db);
    const std::string sql = "BEGIN; WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < " +
                            std::to_string(rows) +
                            ") INSERT INTO events(boot_id, timestamp, event_type, payload) "
                            "SELECT x'00000000000000000000000000000001', " +
                            std::to_string(realtime_ns()) +
                            " - 3600000000000 + i * 1000, 'bench.old', "
                            "x'81a475736572a7' || CAST(printf('u%06d', i % 1000000) AS BLOB) FROM n; COMMIT;";
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
    sqlite3_close(db);
    if (rc != SQLITE_OK) throw std::runtime_error("prefilling " + dir + " failed");
    return dir;
}

void index_pending(const Options& o) {
    const auto shim = start_shim(o, o.capacity_mib);
    const std::vector<uint64_t> caps = ring_capacities();
    const auto cpus = uint32_t(caps.size());
    const std::vector<uint8_t> payload = bench::payload_64();
    const uint64_t event_size = 29 + kType.size() + 48 + payload.size();
    const uint64_t per_cpu = o.capacity_mib * (1 << 20) * 9 / 10 / event_size;
    bench::fill_rings(cpus, per_cpu, kType, payload);
    const uint64_t events = per_cpu * cpus;

    std::vector<double> plain, pending, ratio;
    bool exact = true;
    uint64_t started = 0, cancelled = 0, done = 0;
    for (int rep = 0; rep < o.reps; ++rep) {
        DrainRun runs[2];
        for (int with_index = 0; with_index < 2; ++with_index) {
            DrainSetup setup{prefilled_store(o, kIndexPrefillRows), kIndexPrefillRows, with_index ? "user" : ""};
            runs[with_index] = drain_backlog(o, shim->socket(), 1, events, setup);
            std::filesystem::remove_all(setup.store_dir);
            exact = exact && runs[with_index].exact;
        }
        started += runs[1].builds_started;
        cancelled += runs[1].builds_cancelled;
        done += runs[1].builds_done;
        plain.push_back(runs[0].rate);
        pending.push_back(runs[1].rate);
        ratio.push_back(runs[1].rate / runs[0].rate);
    }
    bench::Table table({"index work", "eventd ev/s (median)", "exact (no gap, every event once)", "vs no index work",
                        "goal", "result"});
    table.add({"none", k_per_s(bench::median(plain)), exact ? "yes" : "NO", "1.00x", "", ""});
    table.add({"EVENTS INDEX user pending (2 M-row shard)", k_per_s(bench::median(pending)), exact ? "yes" : "NO",
               bench::fmt("%.2fx", bench::median(ratio)), ">= 0.9x, no extra gap",
               bench::verdict(bench::median(ratio) >= 0.9 && exact)});
    table.print("eventd: draining a backlog at saturation while an index build is pending (same run, alternating)");
    std::printf(
        "\n%llu events per run, StorageShards 1, shard prefilled with %llu rows; %d run(s) of each. During the "
        "drains with the index desired the writer started %llu build(s), %llu cancelled by the pressure, %llu "
        "finished (the rest of the time the build was pending: no quiet period).\n",
        (unsigned long long)events, (unsigned long long)kIndexPrefillRows, o.reps, (unsigned long long)started,
        (unsigned long long)cancelled, (unsigned long long)done);
    std::fflush(stdout);
}

// The bare loop over the same rows, one thread and file per shard (rows split by CPU, as
// eventd routes them with StorageShards = CPUs; all in one file for StorageShards 1).
double bare_rate(const Options& o, const std::vector<eventd::store::EventRow>& rows, uint32_t files, size_t batch) {
    char templ[256];
    std::snprintf(templ, sizeof templ, "%s/eventd-bench-bare-XXXXXX", o.store_parent.c_str());
    if (!mkdtemp(templ)) throw std::runtime_error("mkdtemp failed");
    const std::filesystem::path dir = templ;
    std::vector<bench::FloorResult> results(files);
    std::vector<std::thread> threads;
    const size_t per_file = rows.size() / files;
    for (uint32_t f = 0; f < files; ++f)
        threads.emplace_back([&, f] {
            results[f] = bench::bare_insert_loop(dir / std::to_string(f),
                                                 std::span(rows).subspan(f * per_file, per_file), batch);
        });
    for (auto& t : threads) t.join();
    std::filesystem::remove_all(dir);
    // Merge the commit points of all threads into one cumulative curve.
    std::vector<std::pair<double, uint64_t>> steps;
    for (const auto& r : results) {
        uint64_t before = 0;
        for (const auto& [t, n] : r.progress) {
            steps.emplace_back(t, n - before);
            before = n;
        }
    }
    std::sort(steps.begin(), steps.end());
    uint64_t total = 0;
    for (auto& [t, n] : steps) n = total += n;
    return window_rate(steps, total);
}

struct ThroughputResult {
    std::map<uint32_t, double> eventd_rate;  // StorageShards → median rows/s
};

ThroughputResult throughput(const Options& o) {
    const uint64_t capacity = o.capacity_mib << 20;
    const auto shim = start_shim(o, o.capacity_mib);
    const std::vector<uint64_t> caps = ring_capacities();
    const auto cpus = uint32_t(caps.size());
    const std::vector<uint8_t> payload = bench::payload_64();
    const uint64_t event_size = 29 + kType.size() + 48 + payload.size();
    const uint64_t per_cpu = capacity * 9 / 10 / event_size;  // no wrap: no gap from the fill
    bench::fill_rings(cpus, per_cpu, kType, payload);
    for (uint32_t cpu = 0; cpu < cpus; ++cpu) {
        kmes::ReaderOptions ro;
        ro.start = kmes::StartAt::end;
        auto reader = kmes::RingReader::open(cpu, ro);
        if (!reader || reader->last_sequence() != per_cpu)
            throw std::runtime_error("ring " + std::to_string(cpu) + " does not hold the filled events");
    }
    const uint64_t events = per_cpu * cpus;
    const auto rows = bench::make_rows(per_cpu, cpus, kType, payload);

    // Every eventd run drains the same backlog: a fresh store holds no sequence state, so
    // eventd reads each ring from tail_pos (the ring itself is never consumed).
    struct Row {
        uint32_t shards;
        std::vector<DrainRun> runs;
        std::vector<double> bare, ratio;
    };
    std::vector<Row> table_rows{Row{1}, Row{cpus}};
    if (cpus == 1) table_rows.pop_back();
    for (int rep = 0; rep < o.reps; ++rep)
        for (Row& r : table_rows) {
            const DrainRun run = drain_backlog(o, shim->socket(), r.shards, events);
            const double bare = bare_rate(o, rows, r.shards, size_t(std::lround(std::max(1.0, run.mean_batch))));
            r.runs.push_back(run);
            r.bare.push_back(bare);
            r.ratio.push_back(run.rate / bare);
        }

    ThroughputResult result;
    bench::Table table({"StorageShards", "eventd ev/s", "per shard", "mean batch", "eventd CPU", "exact",
                        "bare loop ev/s (same batch, 1 file/thread per shard)", "eventd / bare", "goal", "result"});
    for (const Row& r : table_rows) {
        std::vector<double> rates, batches, cpu;
        bool exact = true;
        for (const DrainRun& run : r.runs) {
            rates.push_back(run.rate);
            batches.push_back(run.mean_batch);
            cpu.push_back(run.cpu);
            exact = exact && run.exact;
        }
        const double rate = bench::median(rates), ratio = bench::median(r.ratio);
        result.eventd_rate[r.shards] = rate;
        auto range = [](std::vector<double> v, const char* f, double scale) {
            std::sort(v.begin(), v.end());
            return bench::fmt(f, v.front() * scale) + "-" + bench::fmt(f, v.back() * scale);
        };
        table.add({std::to_string(r.shards) + (r.shards == 1 ? " (all CPUs -> shard 0)" : " (CPU i -> shard i)"),
                   k_per_s(rate) + " (" + range(rates, "%.0f", 1e-3) + " k)", k_per_s(rate / r.shards),
                   bench::fmt("%.0f", bench::median(batches)), percent(bench::median(cpu), 1.0), exact ? "yes" : "NO",
                   k_per_s(bench::median(r.bare)) + " (" + range(r.bare, "%.0f", 1e-3) + " k)",
                   bench::fmt("%.2fx", ratio) + " (" + range(r.ratio, "%.2f", 1) + ")", ">= 0.8x per shard",
                   bench::verdict(ratio >= 0.8)});
    }
    table.print("eventd: persisted events/s draining a backlog, vs the bare SQLite loop (same run, alternating)");
    std::printf(
        "\n%u CPU rings of %llu MiB, %llu events each (%llu B: type %s, 48 B identity, 64 B msgpack payload), "
        "%llu events per run; %d run(s) each, medians (range). eventd start-up (spawn → READY=1): %.0f ms; "
        "store size %.0f B per event. "
        "eventd CPU = CPU seconds per wall second over the drain (%u cores). exact = every event stored once, "
        "no gap record, accounting holds.\n",
        cpus, (unsigned long long)o.capacity_mib, (unsigned long long)per_cpu, (unsigned long long)event_size,
        kType.c_str(), (unsigned long long)events, o.reps, table_rows[0].runs[0].startup * 1e3,
        table_rows[0].runs[0].bytes_per_event, cpus);
    std::fflush(stdout);
    return result;
}

// ---------------------------------------------------------------- sustained offered rate

struct LiveRun {
    double offered = 0;     // events/s actually emitted
    double persisted = 0;   // rows/s committed from 1 s after the start to the end of emission
    double catch_up = 0;    // seconds from the end of emission to the last committed row
    double cpu = 0;         // eventd CPU seconds per wall second while emitting
    double shim_cpu = 0;    // the same for kmes-shimd (socket emission: validation, ring writes)
    double bench_cpu = 0;   // the same for this process (emitter threads, store polling)
    double mean_batch = 0;  // rows per commit (SIGQUIT dump)
    uint64_t emitted = 0;
    bench::StoreSummary summary;
    bool pass() const { return summary.gap_records() == 0 && summary.events() == emitted && summary.accounted(); }
};

LiveRun live_run(const Options& o, uint32_t shards, double total_rate, double seconds) {
    const auto shim = start_shim(o, o.live_capacity_mib);  // default: the production 4 MiB rings
    const auto cpus = uint32_t(ring_capacities().size());
    bench::EventdSettings s;
    s.binary = o.eventd;
    s.kmes_socket = shim->socket();
    s.parent_dir = o.store_parent;
    s.storage_shards = shards;
    bench::EventdProcess eventd(s);
    bench::StoreWatch watch(eventd.store());
    bench::PacedEmitter emitter(cpus, total_rate / cpus, kType, bench::payload_64());
    const double cpu_before = bench::cpu_seconds_of(eventd.pid());
    const double shim_before = bench::cpu_seconds_of(shim->pid()), self_before = bench::cpu_seconds_of(getpid());
    const auto start = Clock::now();
    emitter.start();
    std::vector<std::pair<double, uint64_t>> samples;
    while (since(start) < seconds) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        samples.emplace_back(since(start), watch.rows());
    }
    emitter.stop();
    LiveRun run;
    const double wall = since(start);
    run.cpu = (bench::cpu_seconds_of(eventd.pid()) - cpu_before) / wall;
    run.shim_cpu = (bench::cpu_seconds_of(shim->pid()) - shim_before) / wall;
    run.bench_cpu = (bench::cpu_seconds_of(getpid()) - self_before) / wall;
    run.emitted = emitter.emitted();
    run.offered = double(run.emitted) / emitter.seconds();
    // Catch up: until no new row for 500 ms (eventd commits an idle batch at once).
    const auto stopped = Clock::now();
    uint64_t last = watch.rows();
    auto last_change = Clock::now();
    while (since(last_change) < 0.5 && since(stopped) < 60) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        const uint64_t rows = watch.rows();
        if (rows != last) {
            last = rows;
            last_change = Clock::now();
        }
    }
    run.catch_up = std::chrono::duration<double>(last_change - stopped).count();
    const auto first = std::find_if(samples.begin(), samples.end(), [](const auto& p) { return p.first >= 1.0; });
    if (first != samples.end() && samples.back().first > first->first)
        run.persisted = double(samples.back().second - first->second) / (samples.back().first - first->first);
    eventd.stop(SIGQUIT);
    uint64_t rows = 0, batches = 0;
    for (const auto& [shard, d] : eventd.shard_dump()) {
        rows += d.rows;
        batches += d.batches;
    }
    run.mean_batch = batches ? double(rows) / double(batches) : 0;
    run.summary = bench::StoreSummary::of(eventd.store());
    return run;
}

void sustained(const Options& o, const ThroughputResult& measured, uint32_t cpus) {
    bench::Table table({"StorageShards", "offered ev/s", "persisted ev/s", "catch-up after stop", "mean batch",
                        "CPU: eventd / shim / emitter", "gap records (lost events)", "accounting", "result"});
    std::vector<std::string> summary;
    std::vector<uint32_t> shard_counts{1, cpus};
    if (o.shards) shard_counts = {o.shards};
    for (const uint32_t shards : shard_counts) {
        if (shards == cpus && cpus == 1 && !summary.empty()) break;
        auto it = measured.eventd_rate.find(shards);
        const double reference = o.rate ? o.rate : it != measured.eventd_rate.end() ? it->second : 100000;
        double best = 0, best_f = 0, failed_f = 0;
        auto trial = [&](double f) {
            const LiveRun run = live_run(o, shards, reference * f, o.live_time);
            const auto& s = run.summary;
            table.add({std::to_string(shards), k_per_s(run.offered) + bench::fmt(" (%.2f of drain rate)", f),
                       k_per_s(run.persisted), bench::fmt("%.2f s", run.catch_up), bench::fmt("%.0f", run.mean_batch),
                       percent(run.cpu, 1.0) + " / " + percent(run.shim_cpu, 1.0) + " / " + percent(run.bench_cpu, 1.0),
                       std::to_string(s.gap_records()) + " (" + std::to_string(s.lost()) + ")",
                       s.accounted() ? "exact" : "BROKEN", run.pass() ? "zero gaps" : "gaps"});
            if (run.pass() && f > best_f) {
                best = run.offered;
                best_f = f;
            }
            return run.pass();
        };
        // Ascending ladder to the first trial with a gap, then two bisection steps between
        // the last clean rate and that one.
        // --rate: one trial at exactly that rate (for diagnosis).
        const std::vector<double> ladder =
            o.rate ? std::vector<double>{1.0} : std::vector<double>{0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0};
        for (const double f : ladder)
            if (!trial(f)) {
                failed_f = f;
                break;
            }
        for (int step = 0; step < 2 && failed_f != 0 && !o.rate; ++step) {
            const double mid = (best_f + failed_f) / 2;
            if (!trial(mid)) failed_f = mid;
        }
        const bool failed = failed_f != 0;
        summary.push_back("StorageShards " + std::to_string(shards) + ": " + (failed ? "" : ">= ") + k_per_s(best) +
                          " events/s");
    }
    table.print("eventd: offered rate sustained with zero gaps (live emission, " + std::to_string(o.live_capacity_mib) +
                " MiB rings)");
    std::printf("\nHighest offered rate sustained with zero gaps for %.0f s: ", o.live_time);
    for (size_t i = 0; i < summary.size(); ++i) std::printf("%s%s", i ? "; " : "", summary[i].c_str());
    std::printf(
        ". Ladder: fractions of the backlog drain rate above, ascending to the first trial with a gap, "
        "then two bisection steps. Offered = events actually emitted per second (%u pinned emitter threads, "
        "kmes_emit_batch every 1 ms); persisted = committed rows per second from 1 s after the start to the "
        "end of emission; mean batch = rows per commit (eventd's SIGQUIT dump); CPU = CPU seconds per "
        "wall second of eventd / kmes-shimd / this process (emitter threads, store polling).\n",
        cpus);
    std::fflush(stdout);
}

// ---------------------------------------------------------------- latency

void latency(const Options& o) {
    bench::Table table({"offered ev/s", "rows seen / emitted", "p50 ms", "p90 ms", "p99 ms", "max ms", "poll period",
                        "goal", "result"});
    for (const double rate : {100.0, 1000.0, 10000.0}) {
        bench::ShimProcess shim(o.shimd);
        const auto cpus = uint32_t(ring_capacities().size());
        bench::EventdSettings s;
        s.binary = o.eventd;
        s.kmes_socket = shim.socket();
        s.parent_dir = o.store_parent;
        bench::EventdProcess eventd(s);  // StorageShards 0 = CPU count, MaxBatchLatencyMs 100
        bench::StoreWatch watch(eventd.store());
        bench::PacedEmitter emitter(cpus, rate / cpus, kType, bench::payload_64());
        std::vector<uint64_t> timestamps;
        std::vector<double> ms;
        uint64_t polls = 0;
        const auto start = Clock::now();
        emitter.start();
        const double seconds = rate == 100.0 ? o.latency_time : std::min(o.latency_time, 10.0);
        auto poll = [&] {
            timestamps.clear();
            watch.new_event_timestamps(timestamps);
            const uint64_t now = realtime_ns();
            for (uint64_t t : timestamps) ms.push_back(double(int64_t(now - t)) / 1e6);
            ++polls;
        };
        // After the emission, up to 2 s more to see the last rows, and one poll after the
        // deadline (this process may have been descheduled past it).
        while (since(start) < seconds || (ms.size() < emitter.emitted() && since(start) < seconds + 2)) {
            if (since(start) >= seconds) emitter.stop();
            poll();
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        emitter.stop();  // also when every event was seen by the deadline
        if (ms.size() < emitter.emitted()) poll();
        const double poll_ms = since(start) * 1e3 / double(polls);
        // Every event must have been seen. If not: where is the rest — in the ring, committed?
        std::string missing;
        if (ms.size() != emitter.emitted()) {
            const auto live = bench::StoreSummary::of(eventd.store());
            for (uint32_t cpu = 0; cpu < cpus; ++cpu) {
                kmes::ReaderOptions ro;
                ro.start = kmes::StartAt::end;
                auto reader = kmes::RingReader::open(cpu, ro);
                const auto it = live.cpus.find(uint16_t(cpu));
                missing += " cpu " + std::to_string(cpu) + ": ring last sequence " +
                           std::to_string(reader ? reader->last_sequence() : 0) + ", committed " +
                           std::to_string(it == live.cpus.end() ? 0 : it->second.events) + " up to " +
                           std::to_string(it == live.cpus.end() ? 0 : it->second.max_sequence) + ";";
            }
        }
        eventd.stop(SIGTERM);
        const auto summary = bench::StoreSummary::of(eventd.store());
        if (summary.events() != emitter.emitted() || ms.size() != emitter.emitted()) {
            std::fprintf(stderr,
                         "latency at %.0f ev/s: emitted %llu, seen by the poller %zu, stored after shutdown %llu, "
                         "gaps %llu; before shutdown:%s store kept in %s\n",
                         rate, (unsigned long long)emitter.emitted(), ms.size(), (unsigned long long)summary.events(),
                         (unsigned long long)summary.gap_records(), missing.c_str(), eventd.store().c_str());
            eventd.keep_directory();
        }
        std::sort(ms.begin(), ms.end());
        auto pct = [&](double p) {
            return ms.empty() ? 0.0 : ms[std::min(ms.size() - 1, size_t(p * double(ms.size())))];
        };
        const bool low = rate == 100.0;
        table.add({bench::fmt("%.0f", rate), std::to_string(ms.size()) + " / " + std::to_string(emitter.emitted()),
                   bench::fmt("%.1f", pct(0.5)), bench::fmt("%.1f", pct(0.9)), bench::fmt("%.1f", pct(0.99)),
                   bench::fmt("%.1f", ms.empty() ? 0.0 : ms.back()), bench::fmt("%.2f ms", poll_ms),
                   low ? "p99 <= MaxBatchLatencyMs (100)" : "-", low ? bench::verdict(pct(0.99) <= 100) : "-"});
    }
    table.print("eventd: emit-to-commit latency (StorageShards 0, MaxBatchLatencyMs 100)");
    std::printf(
        "\nEmit time = the row's timestamp (the shim's CLOCK_REALTIME at the ring write). Commit time = "
        "when a reader polling every shard (read-only, WAL) first sees the row; it polls about every "
        "'poll period', so each sample overstates the latency by up to one period plus one query.\n");
    std::fflush(stdout);
}

// ---------------------------------------------------------------- RSS

void rss(const Options& o) {
    bench::ShimProcess shim(o.shimd);
    const auto cpus = uint32_t(ring_capacities().size());
    bench::EventdSettings s;
    s.binary = o.eventd;
    s.kmes_socket = shim.socket();
    s.parent_dir = o.store_parent;
    bench::EventdProcess eventd(s);
    const bench::Rss at_ready = bench::rss_of(eventd.pid());
    bench::PacedEmitter emitter(cpus, o.rss_rate / cpus, kType, bench::payload_64());
    const auto start = Clock::now();
    emitter.start();
    std::vector<std::pair<double, bench::Rss>> samples;
    for (int second = 1; second <= int(o.rss_time); ++second) {
        std::this_thread::sleep_until(start + std::chrono::seconds(second));
        samples.emplace_back(since(start), bench::rss_of(eventd.pid()));
    }
    emitter.stop();
    const uint64_t emitted = emitter.emitted();
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const bench::Rss at_end = bench::rss_of(eventd.pid());
    eventd.stop(SIGTERM);
    const auto summary = bench::StoreSummary::of(eventd.store());

    auto mib = [](uint64_t kib) { return bench::fmt("%.1f", double(kib) / 1024); };
    bench::Table table({"time", "VmRSS MiB", "RssAnon MiB", "RssShmem MiB (rings)", "RssFile MiB"});
    table.add({"READY=1", mib(at_ready.total), mib(at_ready.anon), mib(at_ready.shmem), mib(at_ready.file)});
    const size_t n = samples.size();
    std::set<size_t> picks;
    for (double f : {0.0, 0.1, 0.25, 0.5, 0.75, 1.0})
        if (n) picks.insert(std::min(n - 1, size_t(f * double(n - 1) + 0.5)));
    if (n > 10) picks.insert(9);
    for (size_t i : picks) {
        const auto& [t, r] = samples[i];
        table.add({bench::fmt("%.0f s", t), mib(r.total), mib(r.anon), mib(r.shmem), mib(r.file)});
    }
    table.add({"after stop of load", mib(at_end.total), mib(at_end.anon), mib(at_end.shmem), mib(at_end.file)});
    table.print(bench::fmt("eventd resident memory under %.0f events/s", o.rss_rate) +
                bench::fmt(" for %.0f s (StorageShards 0)", o.rss_time));
    uint64_t max_anon = 0;
    for (const auto& [t, r] : samples) max_anon = std::max(max_anon, r.anon);
    const size_t early = std::min<size_t>(9, n ? n - 1 : 0);  // the sample at 10 s, or the last
    const uint64_t anon_early = n ? samples[early].second.anon : 0;
    const uint64_t anon_end = n ? samples.back().second.anon : 0;
    std::printf(
        "\nRssAnon (heap, stacks): %s MiB at %.0f s, %s MiB at the end, max %s MiB; VmHWM %s MiB. "
        "%llu events emitted, %llu stored, %llu gap records. RssShmem is the ring pages eventd has read through "
        "its mappings (shared with the shim), not eventd's own memory.\n",
        mib(anon_early).c_str(), n ? samples[early].first : 0.0, mib(anon_end).c_str(), mib(max_anon).c_str(),
        mib(at_end.hwm).c_str(), (unsigned long long)emitted, (unsigned long long)summary.events(),
        (unsigned long long)summary.gap_records());
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const Options o = Options::parse(argc, argv);
        if (geteuid() != 0)
            std::fprintf(stderr, "warning: not root — the shim's per-process rate limit caps the emitters\n");
        std::printf("\neventd benchmark: store under %s (%s); eventd %s\n", o.store_parent.c_str(),
                    filesystem_of(o.store_parent).c_str(), o.eventd.c_str());
        ThroughputResult measured;
        if (o.wants("throughput")) measured = throughput(o);
        const auto cpus = uint32_t(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
        if (o.wants("sustained")) sustained(o, measured, cpus);
        if (o.wants("latency")) latency(o);
        if (o.wants("rss")) rss(o);
        if (o.wants("index")) index_pending(o);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "kmes-bench-eventd: %s\n", e.what());
        return 1;
    }
    return 0;
}
