// kmes-bench-index: adaptive secondary indexes (issue 10 "Benchmarks", PSD-008 §3.3,
// docs/PERFORMANCE.md §8), measured at the store level: store::ShardDb on shard files in a
// directory of its own under --store-dir (a real disk: commits fsync), removed at exit. Rows
// are bench/synthetic_events.hpp's (the query store's event types and msgpack payloads).
//
//   cancel  One shard of --rows rows (default 2,000,000). --runs times (default 100): a thread
//           starts run_index_statement(CREATE INDEX on payload `user`) with a cancel callback
//           reading an atomic flag, as the writer's build_must_yield() does; after a random
//           50–1500 ms (--max-delay-ms) the main thread notes the time and raises the flag, joins, then commits
//           one 1000-row batch (begin, insert×1000, account, commit). Reported per run:
//           flag → run_index_statement returns (cancel + rollback), and flag → that commit
//           returns: the "time from the pressure signal to the next commit" (goal
//           p99 ≤ 50 ms). Not included: how long a drain thread takes to notice ring fill
//           and raise the flag. A build that completes before the flag is counted, dropped,
//           and left out of the latencies. Afterwards one uncancelled build gives the full
//           build time, for scale, and the intervals between the callback's calls: a cancel
//           cannot be seen sooner, so they show which phases of a build answer late.
//   cost    Ingest cost of k live secondary indexes, k = 0, 1, 3 (payload `user`; + header
//           `event_type`, payload `source.name`). One shard of --cost-rows rows (default
//           500,000) is built, closed and copied three times; the copies get their k indexes.
//           Then, for --time seconds (default 60), chunks of 20 batches of 1000 rows go to
//           each copy in turn (the order rotates every round), the writer's path: begin,
//           insert×1000, account, commit (WAL, synchronous=FULL: the fsync is in it), then
//           checkpoint_if_needed() as the writer does after every commit. Wall time, since
//           the fsync is the point; each copy gets the same rows. Reported: events/s (median
//           of chunks), per-batch times, and the ratio to k = 0 (median of the ratios of the
//           chunks of one round).
//
//   The other two parts of ./scripts/bench index run real daemons and live beside their kin:
//   query speed with and without the index (kmes-bench-query --index FIELD) and ingest at
//   saturation while a build is pending (kmes-bench-eventd --only index).
//
//   kmes-bench-index [--only cancel|cost]… [--quick] [--runs N] [--max-delay-ms MS] [--rows N] [--time S]
//                    [--cost-rows N] [--store-dir DIR] [--seed N]
#include <csignal>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cli.hpp"
#include "harness.hpp"
#include "store/secondary_index.hpp"
#include "store/shard_db.hpp"
#include "synthetic_events.hpp"
#include "temp_dir.hpp"

namespace fs = std::filesystem;
using bench::WallClock;
using eventd::store::EventRow;
using eventd::store::SecondaryIndex;
using eventd::store::ShardDb;

namespace {

// SIGINT/SIGTERM: loops stop at their next check and unwind, so the stores are removed.
// (Signal-handler state is the one global a program cannot avoid.)
std::atomic<bool> g_interrupted{false};
extern "C" void on_signal(int) { g_interrupted.store(true, std::memory_order_relaxed); }
void check_interrupted() {
    if (g_interrupted.load(std::memory_order_relaxed)) throw std::runtime_error("interrupted");
}

struct Options {
    std::vector<std::string> only;  // empty: every part
    bool quick = false;
    uint32_t runs = 100;
    uint32_t max_delay_ms = 1500;
    uint64_t rows = 2'000'000;
    double cost_seconds = 60;
    uint64_t cost_rows = 500'000;
    std::string store_dir;
    uint64_t seed = 42;
    bool wants(const std::string& part) const {
        return only.empty() || std::find(only.begin(), only.end(), part) != only.end();
    }
};

Options parse(int argc, char** argv) {
    Options o;
    const char* env_dir = std::getenv("BENCH_STORE_DIR");
    o.store_dir = env_dir && *env_dir ? env_dir : "/var/tmp";
    CLI::App app{
        "Adaptive secondary indexes at the store level (store::ShardDb on a real disk): how fast a\n"
        "cancelled index build gives the shard back to a commit (cancel), and what k live\n"
        "secondary indexes cost the writer's batches (cost).",
        "kmes-bench-index"};
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // a repeated option: the last wins
    app.add_option("--only", o.only, "a part to run: cancel | cost (repeatable; default all)")
        ->type_name("PART")
        ->check(CLI::IsMember({"cancel", "cost"}))
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    bench::cli::add_run_length(
        app,
        [&o] {
            o.quick = true;
            o.runs = 10;
            o.cost_seconds = 6;
            o.cost_rows = 100'000;
        },
        "short runs: 10 cancels, cost for 6 s on 100,000-row shards (the cancel shard keeps --rows)",
        [&o](double seconds) { o.cost_seconds = seconds; }, "cost: seconds of alternating chunks (default 60)");
    app.add_option("--runs", o.runs, "cancel: cancelled builds (default 100)")->type_name("N");
    app.add_option("--max-delay-ms", o.max_delay_ms,
                   "cancel: the flag comes after a uniform 50 ms to this (default 1500; longer reaches the "
                   "build's later phases)")
        ->type_name("MS");
    app.add_option("--rows", o.rows, "cancel: rows in the shard (default 2,000,000)")->type_name("N");
    app.add_option("--cost-rows", o.cost_rows, "cost: rows in each shard before measuring (default 500,000)")
        ->type_name("N");
    app.add_option("--store-dir", o.store_dir, "parent of the temporary stores (a real disk, not tmpfs)")
        ->type_name("DIR")
        ->capture_default_str();
    app.add_option("--seed", o.seed, "random seed")->type_name("N")->capture_default_str();
    bench::cli::parse_or_exit(app, argc, argv);
    if (o.runs == 0) bench::cli::usage_error(app, "--runs must be at least 1");
    if (o.max_delay_ms < 50) bench::cli::usage_error(app, "--max-delay-ms must be at least 50");
    if (o.rows < 1000 || o.cost_rows < 1000) bench::cli::usage_error(app, "--rows and --cost-rows must be ≥ 1000");
    if (o.cost_seconds <= 0) bench::cli::usage_error(app, "--time must be positive");
    return o;
}

std::string load_average() {
    std::string text;
    std::getline(std::ifstream("/proc/loadavg"), text);
    // "0.52 0.58 0.59 1/123 4567": the three averages.
    size_t end = 0;
    for (int i = 0; i < 3 && end != std::string::npos; ++i) end = text.find(' ', end + (i ? 1 : 0));
    return text.substr(0, end);
}

double ms_between(WallClock::time_point a, WallClock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

void must(const eventd::store::Status& status, const std::string& what) {
    if (!status) throw std::runtime_error(what + ": " + status.error().message);
}

// --- rows -----------------------------------------------------------------------------------

// The rows of one shard, continuing: ids and timestamps increase, each CPU's sequences are
// consecutive. Copyable, so shards prepared identically can continue with identical rows.
class RowSource {
public:
    RowSource(const bench::synthetic::Pools& pools, uint64_t seed) : pools_(&pools), rng_(seed) {
        using namespace std::chrono;
        next_ns_ = uint64_t(duration_cast<nanoseconds>(system_clock::now().time_since_epoch()).count());
    }

    // `n` rows, each CPU's sequences as ranges to account for in the same transaction.
    struct Batch {
        std::vector<EventRow> rows;
        uint64_t first[bench::synthetic::kCpus] = {};
        uint64_t last[bench::synthetic::kCpus] = {};
    };
    Batch next(size_t n) {
        using bench::synthetic::kPoolPerType;
        using bench::synthetic::kTypes;
        Batch b;
        b.rows.resize(n);
        for (EventRow& row : b.rows) {
            const uint32_t cpu = uint32_t(rng_() % bench::synthetic::kCpus);
            const size_t type = pools_->pick_type(rng_);
            const auto& payload = pools_->payloads[type][rng_() % kPoolPerType];
            row.boot_id = pools_->boots[1];
            row.timestamp = next_ns_ += 1000 + rng_() % 1000;
            row.cpu_id = uint16_t(cpu);
            row.sequence = ++sequence_[cpu];
            row.origin_class = kTypes[type].origin;
            row.event_type = kTypes[type].name;
            row.effective_token = row.true_token = pools_->tokens[rng_() % pools_->tokens.size()];
            row.process = pools_->processes[rng_() % pools_->processes.size()];
            if (!payload.empty()) row.payload = payload;  // app.heartbeat: no payload (NULL)
            if (!b.first[cpu]) b.first[cpu] = *row.sequence;
            b.last[cpu] = *row.sequence;
        }
        return b;
    }

private:
    const bench::synthetic::Pools* pools_;
    std::mt19937_64 rng_;
    uint64_t next_ns_ = 0;
    uint64_t sequence_[bench::synthetic::kCpus] = {};
};

// The writer's transaction for one batch (ShardWriter::commit_batch): begin, the rows, the
// sequence ranges, commit — the durability boundary (WAL, synchronous=FULL).
void write_batch(ShardDb& db, const RowSource::Batch& batch, const kmes::Guid& boot) {
    must(db.begin(), "begin");
    for (const EventRow& row : batch.rows) must(db.insert(row), "insert");
    for (uint32_t cpu = 0; cpu < bench::synthetic::kCpus; ++cpu)
        if (batch.first[cpu]) must(db.account(boot, uint16_t(cpu), batch.first[cpu], batch.last[cpu]), "account");
    must(db.commit(), "commit");
}

// Fill through ShardDb in 50,000-row transactions (fewer fsyncs than the writer's batches;
// the file ends up the same).
void fill(ShardDb& db, RowSource& source, const kmes::Guid& boot, uint64_t rows, const char* what) {
    const auto started = WallClock::now();
    for (uint64_t done = 0; done < rows;) {
        check_interrupted();
        const size_t n = size_t(std::min<uint64_t>(50'000, rows - done));
        write_batch(db, source.next(n), boot);
        db.checkpoint_if_needed();
        done += n;
        std::fprintf(stderr, "  %s: %llu rows\r", what, (unsigned long long)done);
    }
    std::fprintf(stderr, "  %s: %llu rows in %.0f s\n", what, (unsigned long long)rows,
                 bench::wall_seconds_since(started));
}

std::unique_ptr<ShardDb> open_shard(const fs::path& dir) {
    fs::create_directories(dir);
    auto db = ShardDb::open(dir, 0);
    if (!db) throw std::runtime_error("open a shard in " + dir.string() + ": " + db.error().message);
    return std::move(*db);
}

std::string create_sql(const SecondaryIndex& index) {
    auto sql = eventd::store::create_index_sql(index);
    if (!sql) throw std::runtime_error("no index for " + index.field_path);
    return *sql;
}

std::string fmt_ms(double v) { return bench::fmt(v < 10 ? "%.2f" : "%.1f", v); }
std::string fmt_count(uint64_t n) {
    const std::string digits = std::to_string(n);
    std::string s;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i && (digits.size() - i) % 3 == 0) s += ',';
        s += digits[i];
    }
    return s;
}

// --- cancel ---------------------------------------------------------------------------------

void run_cancel(const Options& o, const bench::synthetic::Pools& pools) {
    bench::TempDir dir(o.store_dir, "eventd-index-bench-cancel-");
    const std::string load_before = load_average();
    auto db = open_shard(dir.path());
    RowSource source(pools, o.seed + 1);
    const kmes::Guid& boot = pools.boots[1];
    fill(*db, source, boot, o.rows, "cancel shard");

    const SecondaryIndex user{"user", true};
    const std::string sql = create_sql(user);
    const std::string name = eventd::store::index_name(user);
    std::mt19937_64 rng(o.seed + 2);
    std::uniform_int_distribution<uint32_t> delay_ms(50, o.max_delay_ms);
    std::vector<double> to_return, to_commit, built_for;
    uint32_t completed = 0;
    for (uint32_t run = 0; run < o.runs; ++run) {
        check_interrupted();
        const RowSource::Batch batch = source.next(1000);  // made before the clock starts
        const auto delay = std::chrono::milliseconds(delay_ms(rng));

        // The flag is the writer's yield_ (ShardWriter::build_must_yield): a relaxed flag,
        // polled every ~1000 VM steps. The times below are handed over by join().
        std::atomic<bool> pressure{false};
        eventd::store::Status status;
        WallClock::time_point returned;
        const auto started = WallClock::now();
        std::thread builder([&] {
            status = db->run_index_statement(sql, [&] {
                return pressure.load(std::memory_order_relaxed) || g_interrupted.load(std::memory_order_relaxed);
            });
            returned = WallClock::now();
        });
        std::this_thread::sleep_until(started + delay);
        const auto signalled = WallClock::now();
        pressure.store(true, std::memory_order_relaxed);
        builder.join();
        write_batch(*db, batch, boot);  // the events that waited for the build
        const auto committed = WallClock::now();
        db->checkpoint_if_needed();

        if (status) {  // finished before the flag: no cancel to measure
            ++completed;
            must(db->run_index_statement(eventd::store::drop_index_sql(name), [] { return false; }), "drop " + name);
            continue;
        }
        if (!status.error().is_cancelled()) throw std::runtime_error("index build: " + status.error().message);
        check_interrupted();
        to_return.push_back(ms_between(signalled, returned));
        to_commit.push_back(ms_between(signalled, committed));
        built_for.push_back(ms_between(started, signalled));
        std::fprintf(stderr, "  cancel %u/%u: %.1f ms to return, %.1f ms to commit\r", run + 1, o.runs,
                     to_return.back(), to_commit.back());
    }
    std::fprintf(stderr, "\n");

    // For scale: the same build left to finish (on the shard as it is now), then dropped. Its
    // callback notes when it is asked: a cancel cannot be seen sooner than the next ask, so
    // the longest interval between asks bounds the cancel latency from below at its worst.
    // Thread CPU time beside wall time tells work from being descheduled (a shared machine).
    std::vector<double> asked, asked_cpu;  // ms since the start
    const auto full_started = WallClock::now();
    const auto full_cpu_started = bench::Clock::now();
    must(db->run_index_statement(sql,
                                 [&] {
                                     asked.push_back(ms_between(full_started, WallClock::now()));
                                     asked_cpu.push_back(bench::seconds_since(full_cpu_started) * 1e3);
                                     return g_interrupted.load(std::memory_order_relaxed);
                                 }),
         "full build of " + name);
    const double full_ms = ms_between(full_started, WallClock::now());
    const double full_cpu_ms = bench::seconds_since(full_cpu_started) * 1e3;
    std::vector<double> gaps, gaps_cpu;
    for (size_t i = 0; i < asked.size(); ++i) {
        gaps.push_back(asked[i] - (i ? asked[i - 1] : 0.0));
        gaps_cpu.push_back(asked_cpu[i] - (i ? asked_cpu[i - 1] : 0.0));
    }
    gaps.push_back(full_ms - (asked.empty() ? 0.0 : asked.back()));  // the last ask to the end: the commit
    gaps_cpu.push_back(full_cpu_ms - (asked_cpu.empty() ? 0.0 : asked_cpu.back()));
    // The longest intervals and where in the build they fell (the build's phases: scan and
    // sort runs, merge, B-tree writes; see docs/PERFORMANCE.md §8).
    std::vector<size_t> longest(gaps.size());
    for (size_t i = 0; i < longest.size(); ++i) longest[i] = i;
    std::sort(longest.begin(), longest.end(), [&](size_t a, size_t b) { return gaps[a] > gaps[b]; });
    longest.resize(std::min<size_t>(longest.size(), 5));
    must(db->run_index_statement(eventd::store::drop_index_sql(name), [] { return false; }), "drop " + name);
    const uint64_t rows_now = o.rows + uint64_t(o.runs) * 1000;

    bench::Table table({"span (from the flag)", "runs", "p50 ms", "p90 ms", "p99 ms", "max ms", "goal", "result"});
    auto row = [&](const std::string& span, const std::vector<double>& v, bool goal) {
        const double p99 = bench::percentile(v, 99);
        table.add({span, std::to_string(v.size()), fmt_ms(bench::percentile(v, 50)), fmt_ms(bench::percentile(v, 90)),
                   fmt_ms(p99), fmt_ms(bench::percentile(v, 100)), goal ? "p99 <= 50 ms" : "-",
                   goal ? bench::verdict(p99 <= 50) : "-"});
    };
    row("-> run_index_statement returns (cancel, rollback)", to_return, false);
    row("-> next 1000-row batch committed (pressure signal -> next commit)", to_commit, true);
    char title[640];
    std::snprintf(title, sizeof title,
                  "Index build cancelled: CREATE INDEX %s on a %s-row shard, flag raised after a uniform "
                  "50-%u ms (build ran %.0f-%.0f ms), %u runs; load average %s -> %s",
                  name.c_str(), fmt_count(o.rows).c_str(), o.max_delay_ms, bench::percentile(built_for, 0),
                  bench::percentile(built_for, 100), o.runs, load_before.c_str(), load_average().c_str());
    table.print(title);
    std::printf("\n- builds completed before the flag (dropped, not in the table): %u of %u\n", completed, o.runs);
    std::printf("- the same build left to finish, for scale: %.0f ms (%.0f ms CPU) on %s rows\n", full_ms, full_cpu_ms,
                fmt_count(rows_now).c_str());
    std::printf(
        "- its cancel callback was asked %zu times; interval between asks p50 %.3f ms, p99 %.3f ms, "
        "max %.1f ms; the longest (wall / CPU ms, starting at ms into the build):",
        asked.size(), bench::percentile(gaps, 50), bench::percentile(gaps, 99), bench::percentile(gaps, 100));
    for (size_t i : longest)
        std::printf(" %.1f / %.1f at %.0f%s;", gaps[i], gaps_cpu[i], i ? asked[i - 1] : 0.0,
                    i == asked.size() ? " (the last ask to the end: commit)" : "");
    std::printf(
        "\n- intervals over 5 ms: %zu (%.0f ms in all)\n",
        size_t(std::count_if(gaps.begin(), gaps.end(), [](double g) { return g > 5; })),
        std::accumulate(gaps.begin(), gaps.end(), 0.0, [](double sum, double g) { return g > 5 ? sum + g : sum; }));
    std::fflush(stdout);
}

// --- cost -----------------------------------------------------------------------------------

struct CostCase {
    int k;
    std::vector<SecondaryIndex> indexes;
    std::unique_ptr<ShardDb> db;
    RowSource source;
    bench::Series rate;                // rows/s, one sample per chunk
    std::vector<double> batch_ms;      // every batch, wall
    std::vector<double> batch_cpu_ms;  // every batch, this thread's CPU time
    std::vector<double> batch_frames;  // every batch: WAL frames its commit wrote
    double build_ms = 0;               // creating its indexes on the prepared shard
};

void run_cost(const Options& o, const bench::synthetic::Pools& pools) {
    constexpr size_t kBatchRows = 1000;
    constexpr int kChunkBatches = 20;
    bench::TempDir dir(o.store_dir, "eventd-index-bench-cost-");
    const std::string load_before = load_average();
    const kmes::Guid& boot = pools.boots[1];

    // One shard, built and closed (the close checkpoints and removes the WAL), copied.
    RowSource base_source(pools, o.seed + 3);
    {
        auto base = open_shard(dir.path() / "base");
        fill(*base, base_source, boot, o.cost_rows, "cost shard");
    }
    std::vector<CostCase> cases;
    const SecondaryIndex user{"user", true}, type{"event_type", false}, source_name{"source.name", true};
    cases.push_back({0, {}, nullptr, base_source});
    cases.push_back({1, {user}, nullptr, base_source});
    cases.push_back({3, {user, type, source_name}, nullptr, base_source});
    for (CostCase& c : cases) {
        const fs::path copy = dir.path() / ("k" + std::to_string(c.k));
        fs::create_directories(copy);
        for (const auto& entry : fs::directory_iterator(dir.path() / "base"))
            fs::copy_file(entry.path(), copy / entry.path().filename());
        {
            auto db = open_shard(copy);
            const auto started = WallClock::now();
            for (const SecondaryIndex& index : c.indexes)
                must(db->run_index_statement(create_sql(index), [] { return false; }), "build an index");
            c.build_ms = ms_between(started, WallClock::now());
        }  // closed: the index pages checkpointed into the file, every copy starts with no WAL
        c.db = open_shard(copy);
    }
    fs::remove_all(dir.path() / "base");

    auto chunk = [&](CostCase& c, bool record) {
        std::vector<RowSource::Batch> batches;  // made before the clock starts
        for (int i = 0; i < kChunkBatches; ++i) batches.push_back(c.source.next(kBatchRows));
        const auto started = WallClock::now();
        auto last = started;
        for (const RowSource::Batch& b : batches) {
            const auto cpu_started = bench::Clock::now();
            const int frames_before = c.db->wal_pages();
            write_batch(*c.db, b, boot);
            // wal_pages() counts from the WAL's start, which a checkpoint may have reset.
            const int frames = c.db->wal_pages() - (c.db->wal_pages() >= frames_before ? frames_before : 0);
            c.db->checkpoint_if_needed();  // as the writer does after every commit
            const auto now = WallClock::now();
            if (record) {
                c.batch_ms.push_back(ms_between(last, now));
                c.batch_cpu_ms.push_back(bench::seconds_since(cpu_started) * 1e3);
                c.batch_frames.push_back(frames);
            }
            last = now;
        }
        if (record) c.rate.add(double(kChunkBatches * kBatchRows) / bench::wall_seconds_since(started));
    };
    for (CostCase& c : cases) chunk(c, false);  // warm-up: each connection's page cache
    const auto started = WallClock::now();
    size_t rounds = 0;
    do {
        check_interrupted();
        for (size_t i = 0; i < cases.size(); ++i) chunk(cases[(rounds + i) % cases.size()], true);
        ++rounds;
        std::fprintf(stderr, "  cost: round %zu\r", rounds);
    } while (bench::wall_seconds_since(started) < o.cost_seconds);
    std::fprintf(stderr, "\n");

    bench::Table table({"live secondary indexes", "events/s (median of chunks)", "vs k = 0 (median ratio)",
                        "batch p50 ms", "batch p99 ms", "CPU ms per batch (p50)", "WAL frames per batch (p50)",
                        "index builds on the prepared shard"});
    for (const CostCase& c : cases) {
        std::string names;
        for (const SecondaryIndex& index : c.indexes)
            names += (names.empty() ? "" : ", ") + eventd::store::index_name(index);
        table.add({"k = " + std::to_string(c.k) + (names.empty() ? "" : " (" + names + ")"),
                   fmt_count(uint64_t(c.rate.med())), bench::fmt("%.2fx", bench::ratio_median(c.rate, cases[0].rate)),
                   fmt_ms(bench::percentile(c.batch_ms, 50)), fmt_ms(bench::percentile(c.batch_ms, 99)),
                   fmt_ms(bench::percentile(c.batch_cpu_ms, 50)),
                   bench::fmt("%.0f", bench::percentile(c.batch_frames, 50)),
                   c.k ? bench::fmt("%.0f ms", c.build_ms) : "-"});
    }
    char title[640];
    std::snprintf(title, sizeof title,
                  "Ingest cost of k live secondary indexes: batches of %zu rows (begin, insert, account, commit "
                  "with fsync, checkpoint_if_needed), wall time, shards of %s rows growing to about %s, %zu rounds "
                  "of %d batches per k; load average %s -> %s",
                  kBatchRows, fmt_count(o.cost_rows).c_str(),
                  fmt_count(o.cost_rows + (rounds + 1) * kChunkBatches * kBatchRows).c_str(), rounds, kChunkBatches,
                  load_before.c_str(), load_average().c_str());
    table.print(title);
}

}  // namespace

int main(int argc, char** argv) try {
    const Options o = parse(argc, argv);
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    std::mt19937_64 rng(o.seed);
    const bench::synthetic::Pools pools(rng);
    if (o.wants("cancel")) run_cancel(o, pools);
    if (o.wants("cost")) run_cost(o, pools);
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "kmes-bench-index: %s\n", e.what());
    return 1;
}
