// kmes-bench-stream: latency of a live stream (issue 4 "Benchmarks": stream commit-to-client
// latency p50/p99 on an idle system, goal p99 ≤ 10 ms; docs/PERFORMANCE.md §6).
//
// Starts a real kmes-shimd and a real eventd on a fresh store under --store-dir (a real disk:
// the commit's fdatasync is part of the path), opens `EVENTS bench.stream STREAM` with a raw
// client speaking the wire format (u32 LE length + msgpack map, §8.8) and waits for `watch`.
// Then emits one event every 1/rate s through libkmes `kmes_emit` (the emitter floats over
// the CPUs, so both rings and both shards take events), its payload {t: CLOCK_REALTIME ns
// just before the call, n: index}. The client thread stamps CLOCK_REALTIME when a frame has
// been read whole, and every record of it gets that arrival time.
//
// eventd does not expose its commit time, so per event the benchmark reports:
//   emit → client        arrival − t. The whole path, an upper bound of commit-to-client.
//   ring → client        arrival − the record's `timestamp` (the shim's CLOCK_REALTIME at the
//                        ring write): without libkmes' round trip.
//   WAL write → client   arrival − the time of the last write to a shard's `-wal` file between
//                        the ring write and the arrival (and before the next event's ring
//                        write), seen through inotify (IN_MODIFY on the store directory; the
//                        blocked reader wakes only for writes, so it costs nothing when idle).
//                        A commit writes its WAL frames, then fdatasyncs; this is therefore
//                        commit-to-client *plus* the fdatasync — still an upper bound of
//                        commit-to-client, and the closest one we can observe from outside.
//                        The inotify reader's own wake-up makes the write time look late by
//                        tens of µs, which shortens this column by as much.
// The first --warmup events (default 10) are not counted (first prepare of the live query,
// cold pages). Every emitted event must arrive; a missing one is reported.
//
//   kmes-bench-stream [--time S] [--rate R] [--shards N] [--warmup N] [--quick]
//                     [--store-dir DIR] [--eventd PATH] [--shimd PATH]
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <poll.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cli.hpp"
#include "eventd_process.hpp"
#include "harness.hpp"
#include "kmes/kmes.h"
#include "shim_process.hpp"

#ifndef KMES_BENCH_EVENTD
#define KMES_BENCH_EVENTD "eventd"
#endif
#ifndef KMES_BENCH_SHIMD
#define KMES_BENCH_SHIMD "kmes-shimd"
#endif

namespace fs = std::filesystem;
using bench::percentile;
using nlohmann::json;

namespace {

constexpr const char* kType = "bench.stream";

struct Options {
    double seconds = 20;
    double rate = 50;
    uint32_t shards = 2;
    uint32_t warmup = 10;
    std::string store_dir = "/var/tmp";
    std::string eventd = KMES_BENCH_EVENTD;
    std::string shimd = KMES_BENCH_SHIMD;
};

Options parse(int argc, char** argv) {
    Options o;
    CLI::App app{
        "Stream latency of eventd on an idle system: a raw `EVENTS bench.stream STREAM` client on a\n"
        "real eventd (with a real kmes-shimd, on a fresh store), paced kmes_emit, arrival minus\n"
        "emit time, ring write time and the commit's last WAL write.",
        "kmes-bench-stream"};
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // a repeated option: the last wins
    bench::cli::add_run_length(
        app, [&o] { o.seconds = 3; }, "short run: 3 s of emission", [&o](double seconds) { o.seconds = seconds; },
        "seconds of emission after the warm-up (default 20)");
    app.add_option("--rate", o.rate, "events per second, in (0, 1000]: a low rate, idle latency")
        ->type_name("R")
        ->capture_default_str();
    app.add_option("--shards", o.shards, "eventd's StorageShards")->type_name("N")->capture_default_str();
    app.add_option("--warmup", o.warmup, "events emitted first and not counted")->type_name("N")->capture_default_str();
    app.add_option("--store-dir", o.store_dir, "parent of the temporary store (a real disk, not tmpfs)")
        ->type_name("DIR")
        ->capture_default_str();
    app.add_option("--eventd", o.eventd, "eventd binary")->type_name("PATH")->capture_default_str();
    app.add_option("--shimd", o.shimd, "kmes-shimd binary")->type_name("PATH")->capture_default_str();
    bench::cli::parse_or_exit(app, argc, argv);
    if (o.rate <= 0 || o.rate > 1000)
        bench::cli::usage_error(app, "--rate must be in (0, 1000] events/s (a low rate: idle latency)");
    if (o.seconds <= 0) bench::cli::usage_error(app, "--time must be positive");
    return o;
}

int64_t realtime_ns() {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// --- the stream client --------------------------------------------------------------------

bool read_exact(int fd, uint8_t* out, size_t n) {
    while (n) {
        const ssize_t got = ::recv(fd, out, n, 0);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return false;
        out += got;
        n -= size_t(got);
    }
    return true;
}

bool write_all(int fd, const uint8_t* data, size_t n) {
    while (n) {
        const ssize_t put = ::send(fd, data, n, MSG_NOSIGNAL);
        if (put < 0 && errno == EINTR) continue;
        if (put <= 0) return false;
        data += put;
        n -= size_t(put);
    }
    return true;
}

// One frame's body, or nullopt when the connection ended.
std::optional<json> read_frame(int fd) {
    uint8_t head[4];
    if (!read_exact(fd, head, 4)) return std::nullopt;
    const uint32_t len = uint32_t(head[0]) | uint32_t(head[1]) << 8 | uint32_t(head[2]) << 16 | uint32_t(head[3]) << 24;
    std::vector<uint8_t> body(len);
    if (!read_exact(fd, body.data(), len)) return std::nullopt;
    return json::from_msgpack(body);
}

int open_stream(const std::string& socket_path, const std::string& query) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", socket_path.c_str());
    if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
        throw std::runtime_error("cannot connect to " + socket_path + ": " + std::strerror(errno));
    const std::vector<uint8_t> body = json::to_msgpack(json{{"query", query}});
    std::vector<uint8_t> frame{uint8_t(body.size()), uint8_t(body.size() >> 8), uint8_t(body.size() >> 16),
                               uint8_t(body.size() >> 24)};
    frame.insert(frame.end(), body.begin(), body.end());
    if (!write_all(fd, frame.data(), frame.size())) throw std::runtime_error("cannot send the query");
    // The initial result (no bench.stream events yet in a fresh store), then `watch`.
    for (;;) {
        auto reply = read_frame(fd);
        if (!reply) throw std::runtime_error("eventd closed the stream before `watch`");
        const std::string status = reply->value("status", "");
        if (status == "watch") break;
        if (status == "error") throw std::runtime_error("eventd: " + reply->value("error", std::string("?")));
    }
    return fd;
}

struct Arrival {
    int64_t n = -1;
    int64_t emit_ns = 0;    // payload t
    int64_t ring_ns = 0;    // record timestamp (shim clock at the ring write)
    int64_t arrive_ns = 0;  // client, frame read whole
    int64_t cpu = -1;
};

// --- WAL writes -----------------------------------------------------------------------------

class WalWatch {
public:
    explicit WalWatch(const std::string& dir) {
        fd_ = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        if (fd_ < 0 || inotify_add_watch(fd_, dir.c_str(), IN_MODIFY) < 0)
            throw std::runtime_error("inotify on " + dir + ": " + std::strerror(errno));
        thread_ = std::thread([this] { run(); });
    }
    ~WalWatch() {
        stop_ = true;
        if (thread_.joinable()) thread_.join();
        close(fd_);
    }
    // Times (CLOCK_REALTIME ns) of writes to any `*-wal` file, ascending.
    std::vector<int64_t> writes() {
        std::lock_guard lock(mutex_);
        return writes_;
    }

private:
    void run() {
        alignas(inotify_event) char buf[8192];
        while (!stop_) {
            pollfd p{fd_, POLLIN, 0};
            if (poll(&p, 1, 100) <= 0) continue;
            const int64_t now = realtime_ns();
            const ssize_t n = read(fd_, buf, sizeof buf);
            for (ssize_t at = 0; at < n;) {
                const auto* e = reinterpret_cast<const inotify_event*>(buf + at);
                const std::string_view name = e->len ? std::string_view(e->name) : std::string_view();
                if (name.size() > 4 && name.substr(name.size() - 4) == "-wal") {
                    std::lock_guard lock(mutex_);
                    writes_.push_back(now);
                }
                at += ssize_t(sizeof(inotify_event) + e->len);
            }
        }
    }
    int fd_ = -1;
    std::atomic<bool> stop_{false};
    std::thread thread_;
    std::mutex mutex_;
    std::vector<int64_t> writes_;
};

// --- statistics -----------------------------------------------------------------------------

}  // namespace

int main(int argc, char** argv) try {
    const Options o = parse(argc, argv);
    const uint32_t total = o.warmup + uint32_t(std::lround(o.seconds * o.rate));

    bench::ShimProcess shim(o.shimd);  // also points this process's libkmes at it
    bench::EventdSettings settings;
    settings.binary = o.eventd;
    settings.kmes_socket = shim.socket();
    settings.parent_dir = o.store_dir;
    settings.storage_shards = o.shards;
    bench::EventdProcess eventd(settings);  // MaxBatchLatencyMs 100, MaxBatchSize 10000
    const std::string query_socket = (fs::path(eventd.store()).parent_path() / "query.sock").string();

    WalWatch wal(eventd.store());
    const int fd = open_stream(query_socket, std::string("EVENTS ") + kType + " STREAM");

    std::vector<Arrival> arrivals;  // the client's until join
    std::atomic<uint32_t> received{0};
    std::string client_error;
    std::thread client([&] {
        try {
            while (arrivals.size() < total) {
                auto frame = read_frame(fd);
                const int64_t now = realtime_ns();
                if (!frame) break;
                const std::string status = frame->value("status", "");
                if (status == "error") {
                    client_error = frame->value("error", std::string("?"));
                    break;
                }
                for (const json& r : frame->value("records", json::array())) {
                    Arrival a;
                    a.n = r.value("n", int64_t(-1));
                    a.emit_ns = r.value("t", int64_t(0));
                    a.ring_ns = r.value("timestamp", int64_t(0));
                    a.cpu = r.value("cpu_id", int64_t(-1));
                    a.arrive_ns = now;
                    arrivals.push_back(a);
                }
                received.store(uint32_t(arrivals.size()));
            }
        } catch (const std::exception& e) {
            client_error = e.what();
        }
    });

    // Paced emission: event i at start + i/rate (no catch-up burst after a late wake-up: a
    // late event is simply emitted late, with its own t).
    const auto start = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
    uint64_t emit_errors = 0;
    for (uint32_t i = 0; i < total; ++i) {
        std::this_thread::sleep_until(start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                  std::chrono::duration<double>(double(i) / o.rate)));
        const std::vector<uint8_t> payload = json::to_msgpack(json{{"t", realtime_ns()}, {"n", i}});
        if (kmes_emit(kType, uint16_t(std::strlen(kType)), payload.data(), uint32_t(payload.size())) != 0)
            ++emit_errors;
    }
    // Everything should be there within a few ms; give stragglers 3 s, then end the stream.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (received.load() < total && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ::shutdown(fd, SHUT_RDWR);
    client.join();
    ::close(fd);
    const std::vector<int64_t> writes = wal.writes();
    const double load_at_end = [] {
        double l = 0;
        if (FILE* f = std::fopen("/proc/loadavg", "r")) {
            if (std::fscanf(f, "%lf", &l) != 1) l = 0;
            std::fclose(f);
        }
        return l;
    }();

    // Per counted event: the three spans in ms.
    std::sort(arrivals.begin(), arrivals.end(), [](const Arrival& a, const Arrival& b) { return a.n < b.n; });
    std::vector<double> emit_client, ring_client, wal_client, emit_ring, ring_wal;
    uint32_t counted = 0, no_wal = 0;
    for (size_t k = 0; k < arrivals.size(); ++k) {
        const Arrival& a = arrivals[k];
        if (a.n < int64_t(o.warmup)) continue;
        ++counted;
        emit_client.push_back(double(a.arrive_ns - a.emit_ns) / 1e6);
        ring_client.push_back(double(a.arrive_ns - a.ring_ns) / 1e6);
        emit_ring.push_back(double(a.ring_ns - a.emit_ns) / 1e6);
        // The commit's last WAL write: in [ring write, arrival], and before the next event's
        // ring write (a later write may be the next event's commit).
        int64_t upper = a.arrive_ns;
        if (k + 1 < arrivals.size()) upper = std::min(upper, arrivals[k + 1].ring_ns);
        auto it = std::upper_bound(writes.begin(), writes.end(), upper);
        if (it == writes.begin() || *std::prev(it) < a.ring_ns) {
            ++no_wal;
            continue;
        }
        const int64_t w = *std::prev(it);
        wal_client.push_back(double(a.arrive_ns - w) / 1e6);
        ring_wal.push_back(double(w - a.ring_ns) / 1e6);
    }

    const uint32_t expected = total - o.warmup;
    bench::Table table({"span", "events", "p50 ms", "p90 ms", "p99 ms", "max ms", "goal", "result"});
    auto row = [&](const std::string& name, const std::vector<double>& v, bool goal) {
        const double p99 = percentile(v, 99);
        table.add({name, std::to_string(v.size()), bench::fmt("%.2f", percentile(v, 50)),
                   bench::fmt("%.2f", percentile(v, 90)), bench::fmt("%.2f", p99),
                   bench::fmt("%.2f", v.empty() ? NAN : *std::max_element(v.begin(), v.end())),
                   goal ? "p99 <= 10 ms" : "-", goal ? (p99 <= 10 ? "reached" : "MISSED") : "-"});
    };
    row("emit -> client (upper bound)", emit_client, true);
    row("ring write -> client", ring_client, false);
    row("last WAL write -> client (commit + fdatasync -> client)", wal_client, true);
    row("emit -> ring write (libkmes round trip)", emit_ring, false);
    row("ring write -> last WAL write (drain, writer)", ring_wal, false);
    char title[512];
    std::snprintf(title, sizeof title,
                  "Stream latency: `EVENTS %s STREAM`, raw socket client, %.0f events/s for %.0f s via kmes_emit "
                  "(%u counted after %u warm-up), StorageShards %u, MaxBatchLatencyMs 100; load average at end %.2f",
                  kType, o.rate, o.seconds, expected, o.warmup, o.shards, load_at_end);
    table.print(title);
    if (counted != expected || emit_errors || !client_error.empty() || no_wal) {
        std::printf("\n- received %u of %u counted events, %llu emit errors", counted, expected,
                    (unsigned long long)emit_errors);
        if (no_wal) std::printf(", %u without a WAL write in their window", no_wal);
        if (!client_error.empty()) std::printf(", client: %s", client_error.c_str());
        std::printf("\n");
    }
    std::fflush(stdout);
    return counted == expected && !emit_errors ? 0 : 1;
} catch (const std::exception& e) {
    std::fprintf(stderr, "kmes-bench-stream: %s\n", e.what());
    return 1;
}
