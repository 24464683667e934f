// Torn reads (PSD-003 §5.1.9.1 step 5) under a producer that overwrites a 64 KiB ring
// continuously while a reader drains it. Every payload is recomputed from the header's
// sequence, so any byte that came from another write is caught.
//
// KMES_TORN_EVENTS overrides the number of events written (default 10 million).
#include <catch2/catch.hpp>

#include <immintrin.h>

#include <atomic>
#include <thread>

#include "ring_harness.hpp"

using namespace kmes;
using namespace kmes::test;

namespace {

constexpr size_t kMinPayload = 16;
constexpr size_t kMaxPayload = 300;  // varied sizes: event boundaries shift from lap to lap
constexpr int kMaxBatch = 16;

uint64_t events_to_write() {
    const char* env = std::getenv("KMES_TORN_EVENTS");
    return env ? std::strtoull(env, nullptr, 10) : 10'000'000;
}

struct ReaderTally {
    uint64_t delivered = 0;
    uint64_t corrupt = 0;           // a delivered event whose bytes do not verify
    uint64_t out_of_order = 0;      // a sequence not greater than the previous one
    uint64_t gaps = 0;              // skipped sequences (expected: overwritten before read)
    uint64_t gaps_without_lap = 0;  // a gap the reader did not account for as a lap
    uint64_t errors = 0;
    uint64_t last_sequence = 0;
    ReaderStats stats;
};

}  // namespace

TEST_CASE("no torn event is ever delivered while the producer overwrites continuously", "[protocol][stress]") {
    const uint64_t total = events_to_write();
    auto set = make_ring_set(kSmallRing);
    RingReader reader = reader_of(*set, 0);
    std::atomic<bool> producer_done{false};

    std::thread producer([&] {
        // Mostly single writes (a publish per event), sometimes a batch (one publish for many).
        std::vector<std::vector<uint8_t>> buffers(kMaxBatch, std::vector<uint8_t>(kMaxPayload));
        std::vector<shim::EventInput> batch(kMaxBatch);
        uint64_t sequence = 0;
        uint64_t rng = 12345;
        while (sequence < total) {
            rng = mix(rng);
            const uint64_t count = (rng % 8 == 0) ? 1 + (rng >> 32) % kMaxBatch : 1;
            const int n = int(std::min<uint64_t>(count, total - sequence));
            for (int i = 0; i < n; ++i) {
                const uint64_t token = sequence + 1 + i;
                const size_t size = payload_size_for(token, kMinPayload, kMaxPayload);
                fill_payload(token, std::span<uint8_t>(buffers[i].data(), size));
                batch[i] = shim::EventInput{kType, std::span<const uint8_t>(buffers[i].data(), size)};
            }
            set->write(0, KMES_ORIGIN_KACS, std::span<const shim::EventInput>(batch.data(), n), shim::Identity{});
            sequence += n;
        }
        producer_done.store(true, std::memory_order_release);
    });

    // Widen the torn-read window now and then: a short pause between the reader's copy and its
    // tail_pos re-check, so the producer overwrites copies in flight even on a busy machine.
    SyncPointGuard guard;
    uint64_t copies = 0;
    base::sync::set_callback("RingReader::read:after_copy", [&] {
        if (++copies % 8 == 0) {
            const uint64_t until = now_ns() + mix(copies) % 3000;
            while (now_ns() < until) _mm_pause();
        }
    });

    ReaderTally tally;
    const auto started = std::chrono::steady_clock::now();
    {
        uint64_t laps_seen = 0;
        int idle = 0;
        for (;;) {
            auto next = reader.next();
            if (!next.ok()) {
                ++tally.errors;
                break;
            }
            if (!next.value()) {
                if (producer_done.load(std::memory_order_acquire) && reader.read_pos() == reader.write_pos_now()) break;
                if (++idle % 64 == 0)
                    std::this_thread::yield();
                else
                    _mm_pause();
                continue;
            }
            const EventView& event = *next.value();
            ++tally.delivered;
            const uint64_t seq = event.sequence();
            const bool intact = event.type() == kType && event.header_size() == kHeaderSize && event.cpu_id() == 0 &&
                                event.origin_class() == KMES_ORIGIN_KACS &&
                                payload_intact(seq, event.payload(), kMinPayload, kMaxPayload);
            if (!intact) ++tally.corrupt;
            if (seq <= tally.last_sequence) ++tally.out_of_order;
            if (seq > tally.last_sequence + 1) {
                tally.gaps += seq - tally.last_sequence - 1;
                if (reader.stats().laps == laps_seen) ++tally.gaps_without_lap;
            }
            laps_seen = reader.stats().laps;
            tally.last_sequence = seq;
        }
    }
    producer.join();
    base::sync::clear_all();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    tally.stats = reader.stats();

    WARN("torn-read stress: " << total << " events written in " << seconds << " s; delivered " << tally.delivered
                              << ", skipped by laps " << tally.gaps << "; laps " << tally.stats.laps << ", torn_reads "
                              << tally.stats.torn_reads << ", corrupt_skips " << tally.stats.corrupt_skips);
    REQUIRE(tally.errors == 0);
    CHECK(tally.corrupt == 0);
    CHECK(tally.out_of_order == 0);
    CHECK(tally.gaps_without_lap == 0);
    // A torn copy is discarded by the step-5 re-check, never mistaken for corruption.
    CHECK(tally.stats.corrupt_skips == 0);
    // Every sequence was either delivered once or skipped by a lap.
    CHECK(tally.last_sequence == total);
    CHECK(tally.delivered + tally.gaps == total);
    CHECK(set->stats(0).written == total);
    CHECK(tally.delivered > 0);
}
