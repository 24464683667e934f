// Idle cost and many rings (issue 11): a real kmes-shimd with R rings and a real eventd with
// R shards (StorageShards 0 = one per ring), for each R of --rings:
//
//   startup    spawn → READY=1 of eventd (the shim is up already)
//   idle       CPU time of each daemon over --idle-time seconds with no event at all, from
//              the scheduler's per-thread run time (/proc/PID/task/*/schedstat, ns), as a
//              share of one core; also threads, open files and resident memory
//   shutdown   SIGTERM → exit of eventd (final drain, final commits, every shard closed)
//
// and, at the largest R, a load run: a new shim whose built-in generator writes exactly
// --events events spread evenly over all R rings (count=N per ring, at --rate events/s in
// all), eventd storing them, then the store audited (bench/store_probe.hpp): every event
// stored once, nothing lost, stored + lost == highest sequence on every ring.
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cli.hpp"
#include "eventd_process.hpp"
#include "shim_process.hpp"
#include "store_probe.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
    std::string shimd = KMES_BENCH_SHIMD;
    std::string eventd = KMES_BENCH_EVENTD;
    std::string store_parent = "/var/tmp";
    std::vector<uint32_t> rings{2, 64, 256};
    double idle_seconds = 30;
    double settle_seconds = 3;
    uint64_t events = 1'000'000;
    uint64_t rate = 50'000;
};

// Run time of every thread of `pid` so far, in seconds (ns resolution, unlike the 10 ms
// ticks of /proc/PID/stat): the first field of each /proc/PID/task/TID/schedstat.
double run_seconds_of(pid_t pid) {
    const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
    double total = 0;
    DIR* dir = opendir(tasks.c_str());
    if (!dir) return 0;
    while (dirent* e = readdir(dir)) {
        if (e->d_name[0] == '.') continue;
        std::ifstream in(tasks + "/" + e->d_name + "/schedstat");
        uint64_t ns = 0;
        if (in >> ns) total += double(ns) / 1e9;
    }
    closedir(dir);
    return total;
}

size_t count_entries(const std::string& dir_path) {
    size_t n = 0;
    DIR* dir = opendir(dir_path.c_str());
    if (!dir) return 0;
    while (dirent* e = readdir(dir))
        if (e->d_name[0] != '.') ++n;
    closedir(dir);
    return n;
}

size_t threads_of(pid_t pid) { return count_entries("/proc/" + std::to_string(pid) + "/task"); }
size_t open_files_of(pid_t pid) { return count_entries("/proc/" + std::to_string(pid) + "/fd"); }

double mib(uint64_t kib) { return double(kib) / 1024; }

bench::EventdSettings eventd_settings(const Options& o, const bench::ShimProcess& shim) {
    bench::EventdSettings s;
    s.binary = o.eventd;
    s.kmes_socket = shim.socket();
    s.parent_dir = o.store_parent;
    s.storage_shards = 0;  // one per ring
    s.ready_timeout_s = 120;
    return s;
}

void idle_run(const Options& o, uint32_t rings) {
    bench::ShimProcess shim(o.shimd, {"--cpus", std::to_string(rings)});
    bench::EventdProcess eventd(eventd_settings(o, shim));
    // Startup work (opening shards, the policy thread's first pass) is not idle cost.
    std::this_thread::sleep_for(std::chrono::duration<double>(o.settle_seconds));
    const double eventd_before = run_seconds_of(eventd.pid()), shim_before = run_seconds_of(shim.pid());
    const auto started = Clock::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(o.idle_seconds));
    const double wall = std::chrono::duration<double>(Clock::now() - started).count();
    const double eventd_cpu = run_seconds_of(eventd.pid()) - eventd_before;
    const double shim_cpu = run_seconds_of(shim.pid()) - shim_before;
    const bench::Rss rss = bench::rss_of(eventd.pid());
    const size_t threads = threads_of(eventd.pid()), files = open_files_of(eventd.pid());
    const bench::Rss shim_rss = bench::rss_of(shim.pid());

    const auto stop_started = Clock::now();
    const int exit_code = eventd.stop(SIGTERM);
    const double shutdown = std::chrono::duration<double>(Clock::now() - stop_started).count();
    std::printf(
        "| %u | %.2f s | %.2f s%s | %zu | %zu | %.1f MiB (anon %.1f) | %.3f %% (%.1f ms) | %.3f %% (%.1f ms) | %.1f "
        "MiB |\n",
        rings, eventd.startup_seconds(), shutdown, exit_code == 0 ? "" : " (exit != 0!)", threads, files,
        mib(rss.total), mib(rss.anon), 100 * eventd_cpu / wall, eventd_cpu * 1e3, 100 * shim_cpu / wall,
        shim_cpu * 1e3, mib(shim_rss.total));
    std::fflush(stdout);
}

void load_run(const Options& o, uint32_t rings) {
    const uint64_t per_ring = (o.events + rings - 1) / rings;
    const uint64_t per_ring_rate = std::max<uint64_t>(1, o.rate / rings);
    const std::string spec = "rate=" + std::to_string(per_ring_rate) + ",count=" + std::to_string(per_ring) +
                             ",payload=64,types=bench.scale";
    bench::ShimProcess shim(o.shimd, {"--cpus", std::to_string(rings), "--generate", spec});
    bench::EventdProcess eventd(eventd_settings(o, shim));
    const uint64_t expected = per_ring * rings;
    const auto started = Clock::now();
    // Every KMES row of every shard counted (not max(id): synthetic rows share the ids).
    const auto deadline = started + std::chrono::seconds(600);
    while (bench::StoreSummary::of(eventd.store()).events() < expected && Clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::seconds(1));
    const double stored_after = std::chrono::duration<double>(Clock::now() - started).count();
    const int exit_code = eventd.stop(SIGTERM);
    const bench::StoreSummary summary = bench::StoreSummary::of(eventd.store());
    bool every_ring_full = summary.cpus.size() == rings;
    for (const auto& [cpu, s] : summary.cpus) every_ring_full = every_ring_full && s.max_sequence == per_ring;
    std::printf("\nload: %u rings × %llu events = %llu events (generator %s)\n", rings,
                static_cast<unsigned long long>(per_ring), static_cast<unsigned long long>(expected), spec.c_str());
    std::printf("| stored | lost (gap records) | rings with every sequence 1…%llu | accounted | all stored, after eventd was ready (the generator writes for %.0f s from the shim's start) | eventd exit |\n",
                static_cast<unsigned long long>(per_ring), double(per_ring) / double(per_ring_rate));
    std::printf("|---|---|---|---|---|---|\n");
    std::printf("| %llu of %llu | %llu (%llu) | %s | %s | %.1f s | %d |\n",
                static_cast<unsigned long long>(summary.events()), static_cast<unsigned long long>(expected),
                static_cast<unsigned long long>(summary.lost()), static_cast<unsigned long long>(summary.gap_records()),
                every_ring_full ? "all" : "NOT all", summary.accounted() ? "exact" : "NOT exact", stored_after,
                exit_code);
    if (summary.events() + summary.lost() != expected || !summary.accounted() || !every_ring_full)
        throw std::runtime_error("the load run's audit failed (see the table)");
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    CLI::App app{"Idle cost, startup/shutdown and a spread load at many rings (real kmes-shimd + eventd).",
                 "kmes-bench-scale"};
    app.add_option("--rings", o.rings, "ring counts to measure (shim --cpus; eventd one shard per ring)")
        ->delimiter(',')
        ->capture_default_str();
    app.add_option("--idle-time", o.idle_seconds, "seconds of idle CPU measurement per ring count")
        ->capture_default_str();
    app.add_option("--events", o.events, "events of the load run at the largest ring count (0: no load run)")
        ->capture_default_str();
    app.add_option("--rate", o.rate, "total events/s of the load run's generator")->capture_default_str();
    app.add_option("--store-dir", o.store_parent, "parent of the temporary stores (a real disk, not tmpfs)")
        ->capture_default_str();
    app.add_option("--eventd", o.eventd, "eventd binary")->capture_default_str();
    app.add_option("--shimd", o.shimd, "kmes-shimd binary")->capture_default_str();
    bench::cli::add_run_length(
        app,
        [&] {
            o.rings = {2, 64};
            o.idle_seconds = 5;
            o.events = 100'000;
        },
        "rings 2 and 64, 5 s idle, a 100 000-event load run", [&](double s) { o.idle_seconds = s; },
        "same as --idle-time");
    bench::cli::parse_or_exit(app, argc, argv);
    if (o.rings.empty() || std::any_of(o.rings.begin(), o.rings.end(), [](uint32_t r) { return r == 0 || r > 4096; }))
        bench::cli::usage_error(app, "--rings: each count must be 1 … 4096");
    try {
        std::printf("\nidle eventd and kmes-shimd, %.0f s each after %.0f s to settle (store under %s)\n",
                    o.idle_seconds, o.settle_seconds, o.store_parent.c_str());
        std::printf("| rings = shards | eventd startup | eventd shutdown | eventd threads | eventd open files | "
                    "eventd RSS | eventd idle CPU (of one core) | kmes-shimd idle CPU | kmes-shimd RSS |\n");
        std::printf("|---|---|---|---|---|---|---|---|---|\n");
        for (uint32_t r : o.rings) idle_run(o, r);
        if (o.events > 0) load_run(o, *std::max_element(o.rings.begin(), o.rings.end()));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "kmes-bench-scale: %s\n", e.what());
        return 1;
    }
    return 0;
}
