// Benchmark 4 (docs/PERFORMANCE.md; DESIGN.md §7 "wake-ups cost more than copies"): a
// producer thread and a consumer thread on one 64 MiB ring, each pinned to its own CPU. The
// producer writes N events through RingSet::write as fast as it can; the consumer drains with
// RingReader::next() and, when the ring is empty, sleeps in RingReader::wait() — the full
// notification handshake (need_wake, fences, futex_counter, futex_wait), with or without the
// optional spin. The consumer is faster than the producer, so it keeps catching up and going
// to sleep: the worst case for wake-ups. Counted: producer FUTEX_WAKE calls and consumer
// futex_wait calls per event, and events lost to laps (should be none).
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "../kmes-shim/lib/ring_region.hpp"
#include "../kmes-shim/shimd/ring_set.hpp"
#include "harness.hpp"
#include "kmes/ring_reader.hpp"

using namespace kmes;
using namespace kmes::shim;

namespace {

// 64 MiB, not the default 4 MiB: at full speed 4 MiB is ~5 ms of events, less than a
// consumer thread can be descheduled on a shared 2-core machine, and lapped runs measure
// the scheduler. The size plays no part in the wake-up path being measured.
constexpr uint64_t kCapacity = 64u << 20;
constexpr uint64_t kEvents = 1'000'000;

struct Variant {
    std::string name;
    uint32_t batch;     // events per RingSet::write
    uint32_t spin;      // ReaderOptions::spin_iterations
    bool poll = false;  // consumer never sleeps: the ceiling without notification
};

struct Outcome {
    double seconds;
    uint64_t delivered, wakes, sleeps;
};

void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu % std::max(1u, std::thread::hardware_concurrency()), &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

Outcome run(const Variant& v) {
    auto rings = RingSet::create(1, kCapacity, RingOptions{});
    if (!rings) throw std::runtime_error(rings.error().message);
    auto ring = (*rings)->ring(0);
    auto base = detail::map_ring_region(ring->consumer_producer_fd(), ring->consumer_page_fd(),
                                        ring->consumer_data_fd(), kCapacity, detail::MapAccess::consumer);
    if (!base) throw std::runtime_error(base.error().message);
    ReaderOptions options;
    options.spin_iterations = v.spin;
    options.reattach = [](uint32_t) -> base::Result<RingMapping> { return base::Error{ENOTSUP, "no resize in this benchmark"}; };
    RingReader reader(0, RingMapping(-1, *base, kCapacity, true), std::move(options));

    const std::vector<uint8_t> payload(64, 0x77);
    const std::vector<EventInput> batch(v.batch, EventInput{"bench.wake", payload});
    std::atomic<bool> go{false};
    uint64_t delivered = 0;

    std::thread consumer([&] {
        pin(1);
        while (!go.load(std::memory_order_acquire)) {}
        while (reader.last_sequence() < kEvents) {
            auto e = reader.next();
            if (!e) throw std::runtime_error(e.error().message);
            if (*e) {
                ++delivered;
                continue;
            }
            if (!v.poll) (void)reader.wait(std::chrono::milliseconds(100));
        }
    });
    pin(0);
    const auto start = bench::WallClock::now();
    go.store(true, std::memory_order_release);
    for (uint64_t written = 0; written < kEvents; written += v.batch)
        (*rings)->write(0, KMES_ORIGIN_USERSPACE, batch, Identity{});
    consumer.join();
    const double seconds = bench::wall_seconds_since(start);
    return Outcome{seconds, delivered, ring->futex_wake_calls(), reader.stats().sleeps};
}

}  // namespace

int main(int argc, char** argv) {
    const bench::Options options = bench::Options::parse(argc, argv);
    const int repeats = options.quick ? 1 : std::max(1, int(options.time * 2.5 + 0.5));  // 5 by default
    const std::vector<Variant> variants{
        {"single writes, spin 0", 1, 0},       {"single writes, spin 200", 1, 200},
        {"single writes, spin 2000", 1, 2000}, {"single writes, consumer polls (no sleep)", 1, 0, true},
        {"batches of 64, spin 0", 64, 0},      {"batches of 64, spin 200", 64, 200},
    };
    std::vector<std::vector<Outcome>> outcomes(variants.size());
    for (int r = 0; r < repeats; ++r)  // variants alternate, so drift hits them alike
        for (size_t i = 0; i < variants.size(); ++i) outcomes[i].push_back(run(variants[i]));

    bench::Table table(
        {"producer / consumer", "M ev/s", "FUTEX_WAKE per 1k ev", "futex_wait per 1k ev", "lost events"});
    for (size_t i = 0; i < variants.size(); ++i) {
        std::vector<double> rate, wakes, sleeps, lost;
        for (const Outcome& o : outcomes[i]) {
            rate.push_back(double(kEvents) / o.seconds / 1e6);
            wakes.push_back(1e3 * double(o.wakes) / kEvents);
            sleeps.push_back(1e3 * double(o.sleeps) / kEvents);
            lost.push_back(double(kEvents - o.delivered));
        }
        table.add({variants[i].name, bench::fmt("%.2f", bench::median(rate)), bench::fmt("%.1f", bench::median(wakes)),
                   bench::fmt("%.1f", bench::median(sleeps)), bench::fmt("%.0f", bench::median(lost))});
    }
    table.print("Wake-ups: producer thread -> consumer thread with the notification wait (1 M events, 64 B payload)");
    std::printf(
        "\nproducer pinned to CPU 0, consumer to CPU 1; wall time from the first write to the last event "
        "delivered; medians of %d runs.\n",
        repeats);
    return 0;
}
