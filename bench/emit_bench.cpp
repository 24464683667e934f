// Benchmark 3 (docs/PERFORMANCE.md): emission over the shim socket from one client process —
// kmes_emit_batch(256) and kmes_emit — against a real kmes-shimd started here (temporary
// socket, `--config /nonexistent`, so 4 MiB rings and the default limits). Run as root, the
// caller is exempt from the per-process rate limit (§4.1.2 step 2, SeTcbPrivilege).
//
// Each call is a full round trip: libkmes builds the message (copying type and payload
// through process_vm_readv, so a bad pointer is EFAULT, not a crash), one SEQPACKET send,
// the shim's checks in §4 order (privilege, count, rate, sizes, UTF-8, msgpack), one
// RingSet::write, the reply. Wall time: the work spans two processes.
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "harness.hpp"
#include "kmes/kmes.h"
#include "kmes/ring_reader.hpp"
#include "shim_process.hpp"

namespace {

// A 64-byte msgpack payload, {"data": <bin 56>} — a map, so validation walks a structure.
std::vector<uint8_t> payload_64() {
    std::vector<uint8_t> p{0x81, 0xa4, 'd', 'a', 't', 'a', 0xc4, 56};
    p.resize(64, 0x5a);
    return p;
}

std::string shimd_path(int argc, char** argv) {
    for (int i = 1; i + 1 < argc; ++i)
        if (std::string_view(argv[i]) == "--shimd") return argv[i + 1];
    return KMES_BENCH_SHIMD;  // the release build's own, set by bench/meson.build
}

[[noreturn]] void die(const char* what) {
    std::fprintf(stderr, "%s: %s\n", what, std::strerror(errno));
    std::exit(1);
}

// Events now in the shim's rings: the last sequence of each ring (sequences start at 1 per
// CPU and nothing else writes here), read through a real attachment.
uint64_t events_in_rings() {
    uint64_t total = 0;
    for (uint32_t cpu = 0;; ++cpu) {
        kmes::ReaderOptions options;
        options.start = kmes::StartAt::end;
        auto reader = kmes::RingReader::open(cpu, options);
        if (!reader) break;  // EINVAL past the last CPU
        total += reader->last_sequence();
    }
    return total;
}

// CPU seconds (user + system, all threads) a process has used so far; 10 ms resolution.
double process_cpu_seconds(pid_t pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string content((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    std::istringstream fields(content.substr(content.rfind(')') + 2));  // from field 3 on
    std::string field;
    double ticks = 0;
    for (int index = 3; index <= 15 && fields >> field; ++index)
        if (index >= 14) ticks += std::stod(field);  // utime, stime
    return ticks / double(sysconf(_SC_CLK_TCK));
}

}  // namespace

int main(int argc, char** argv) {
    const bench::Options options = bench::Options::parse(argc, argv);
    if (geteuid() != 0)
        std::fprintf(stderr, "warning: not root — the shim's per-process rate limit applies and caps these numbers\n");
    bench::ShimProcess shim(shimd_path(argc, argv));

    constexpr std::string_view kType = "bench.emit";
    const std::vector<uint8_t> payload = payload_64();
    std::vector<kmes_emit_entry> entries(KMES_MAX_BATCH, kmes_emit_entry{kType.data(), uint16_t(kType.size()),
                                                                         payload.data(), uint32_t(payload.size())});
    uint64_t emitted = 0;

    auto wall = [](auto body) {
        return [body](uint64_t n) mutable {
            const auto start = bench::WallClock::now();
            const uint64_t done = body(n);
            return std::pair{bench::wall_seconds_since(start), done};
        };
    };
    bench::Contender batch{wall([&](uint64_t n) {
        uint64_t done = 0;
        while (done < n) {
            uint32_t out = 0;
            if (kmes_emit_batch(entries.data(), KMES_MAX_BATCH, &out) != 0) die("kmes_emit_batch");
            done += out;
        }
        emitted += done;
        return done;
    })};
    bench::Contender single{wall([&](uint64_t n) {
        for (uint64_t i = 0; i < n; ++i)
            if (kmes_emit(kType.data(), uint16_t(kType.size()), payload.data(), uint32_t(payload.size())) != 0)
                die("kmes_emit");
        emitted += n;
        return n;
    })};
    bench::Options socket_options = options;
    socket_options.chunk_time = 20e-3;  // round trips: longer chunks smooth out scheduling
    bench::interleave({&batch, &single}, socket_options);

    // Where a batch's time goes: CPU of this process vs the shim over a batch-only stretch.
    const double client_before = process_cpu_seconds(getpid()), shim_before = process_cpu_seconds(shim.pid());
    const auto cpu_start = bench::WallClock::now();
    uint64_t cpu_events = 0;
    while (bench::wall_seconds_since(cpu_start) < std::max(0.5, options.time / 2))
        cpu_events += batch.run(batch.n).second;
    const double cpu_wall = bench::wall_seconds_since(cpu_start);
    const double client_cpu = process_cpu_seconds(getpid()) - client_before;
    const double shim_cpu = process_cpu_seconds(shim.pid()) - shim_before;

    const uint64_t in_rings = events_in_rings();
    const double batch_mps = 1e3 / batch.ns.med();
    bench::Table table({"call", "ns/event", "events/s", "vs batch", "goal", "result"});
    table.add({"kmes_emit_batch(256), 64 B payload", bench::fmt("%.0f", batch.ns.med()),
               bench::fmt("%.2f M", batch_mps), "1.00x", ">= 1 M ev/s", bench::verdict(batch_mps >= 1.0)});
    table.add({"kmes_emit, 64 B payload", bench::fmt("%.0f", single.ns.med()),
               bench::fmt("%.3f M", 1e3 / single.ns.med()),
               bench::fmt("%.1fx slower", bench::ratio_median(single.ns, batch.ns)), "-", "-"});
    table.print(geteuid() == 0 ? "Socket emission: one client process -> kmes-shimd (root, no rate limit)"
                               : "Socket emission: one client process -> kmes-shimd (NOT root: rate-limited)");
    const double batches = double(cpu_events) / KMES_MAX_BATCH;
    std::printf("\nper batch of 256: %.0f us wall, %.0f us CPU in the client, %.0f us CPU in kmes-shimd\n",
                cpu_wall / batches * 1e6, client_cpu / batches * 1e6, shim_cpu / batches * 1e6);
    std::printf(
        "emitted %llu events, found %llu in the rings (must match). Medians of %zu alternating chunks of "
        "~%.0f ms (wall time).\n",
        (unsigned long long)emitted, (unsigned long long)in_rings, batch.ns.values.size(),
        socket_options.chunk_time * 1e3);
    return in_rings == emitted ? 0 : 1;
}
