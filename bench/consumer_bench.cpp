// Benchmark 2 (docs/PERFORMANCE.md): the consumer's drain, RingReader::next() — the whole
// §5.1.9.1 read protocol (acquire loads of write_pos and tail_pos, event_size validation,
// copy-out bounded by event_size, acquire fence, torn-read re-check of tail_pos) — over a
// full 4 MiB ring, in process, through a real consumer mapping (read-only memfds, as
// kmes_map builds it).
//
// One pass: the producer (untimed) writes one ring's worth of new events, so the reader,
// parked at the old write_pos, finds itself lapped, jumps to tail_pos and drains everything
// to write_pos — ~4 MiB of events just written by the same core (from L2/L3: a consumer that
// keeps up). Each contender below gets its own identical re-fill and copies the same bytes
// from the same consumer mapping:
//   memcpy           the byte range in 16 KiB memcpys into one 16 KiB buffer: what the
//                    memory system gives for reading these bytes into a destination that
//                    stays in L1, as the reader's copy buffer does (the goal's baseline)
//   4 MiB memcpy     the byte range in one memcpy into a separate 4 MiB buffer — the literal
//                    "plain memcpy", slower because it also writes 4 MiB to a cold
//                    destination (glibc uses non-temporal stores at this size)
//   per-event copy   one memcpy per event (sizes known) into one small buffer: the copy-out
//                    a reader cannot avoid, without any protocol
//   block drain      bench/block_drain.hpp, a prototype of the protocol per 16 KiB block —
//                    how close a batch API would get
#include <memory>
#include <stdexcept>
#include <string>

#include "../kmes-shim/lib/ring_region.hpp"
#include "../kmes-shim/shimd/ring_set.hpp"
#include "block_drain.hpp"
#include "harness.hpp"
#include "kmes/ring_reader.hpp"

using namespace kmes;
using namespace kmes::shim;

namespace {

constexpr uint64_t kCapacity = 4u << 20;
constexpr uint64_t kBlock = 16u << 10;  // fits L1 with the source streaming through

struct Row {
    size_t payload;
    uint64_t event_size = 0;
    bench::Series reader_ns, memcpy_ns, bulk_ns, per_event_ns, block_ns;  // ns per event
};

// One ring, a consumer mapping of it, the reader under test and the block-drain prototype.
struct Rig {
    std::unique_ptr<RingSet> rings;
    std::unique_ptr<RingReader> reader;
    std::unique_ptr<bench::BlockDrain> block;
    detail::RingView consumer_view;

    static Rig make() {
        Rig rig;
        auto rings = RingSet::create(1, kCapacity, RingOptions{});
        if (!rings) throw std::runtime_error(rings.error().message);
        rig.rings = std::move(*rings);
        auto ring = rig.rings->ring(0);
        auto base = detail::map_ring_region(ring->consumer_producer_fd(), ring->consumer_page_fd(),
                                            ring->consumer_data_fd(), kCapacity, detail::MapAccess::consumer);
        if (!base) throw std::runtime_error(base.error().message);
        rig.consumer_view = detail::view_of(*base, kCapacity);
        ReaderOptions options;
        options.reattach = [](uint32_t) -> base::Result<RingMapping> {
            return base::Error{ENOTSUP, "no resize in this benchmark"};
        };
        rig.reader = std::make_unique<RingReader>(0, RingMapping(-1, *base, kCapacity, true), std::move(options));
        rig.block = std::make_unique<bench::BlockDrain>(rig.consumer_view, kBlock);
        return rig;
    }

    // Write one ring's worth of new events (untimed). Returns the byte range now readable.
    std::pair<uint64_t, uint64_t> refill(std::span<const EventInput> batch, uint64_t event_size) {
        for (uint64_t written = 0; written < kCapacity; written += event_size * batch.size())
            rings->write(0, KMES_ORIGIN_USERSPACE, batch, Identity{});
        return {consumer_view.tail_pos().load(std::memory_order_acquire),
                consumer_view.write_pos().load(std::memory_order_acquire)};
    }
};

}  // namespace

int main(int argc, char** argv) {
    const bench::Options options = bench::Options::parse(argc, argv);
    Rig rig = Rig::make();
    // ~100 B events (29 + 11 type + 48 identity + 12 payload = 100), the goal's size, and a
    // larger one where bandwidth, not per-event work, is the limit.
    constexpr std::string_view kType = "bench.drain";
    std::vector<Row> rows{Row{12}, Row{512}};
    std::vector<uint8_t> block_target(kBlock);
    std::vector<uint8_t> event_target(kCapacity / 2);
    std::vector<uint8_t> bulk_target(kCapacity);
    uint64_t checksum = 0;

    for (Row& row : rows) {
        const std::vector<uint8_t> payload(row.payload, 0x42);
        const EventInput input{kType, payload};
        const std::vector<EventInput> batch(64, input);
        row.event_size = event_size_of(input);
        volatile uint64_t opaque_size = row.event_size;
        const uint64_t size = opaque_size;  // a runtime size, as in the reader

        // Every contender works in whole passes until it did n events; only the drain or
        // copy is timed, never the re-fill before it.
        auto passes = [&](auto drain) {
            return [&, drain](uint64_t n) mutable {
                double timed = 0;
                uint64_t done = 0;
                while (done < n) {
                    auto [tail, write] = rig.refill(batch, row.event_size);
                    const auto start = bench::Clock::now();
                    done += drain(tail, write);
                    timed += bench::seconds_since(start);
                }
                return std::pair{timed, done};
            };
        };
        bench::Contender reader{passes([&](uint64_t, uint64_t) {
            uint64_t events = 0;
            for (;;) {
                auto e = rig.reader->next();
                if (!e || !*e) break;
                checksum += (*e)->sequence();
                ++events;
            }
            return events;
        })};
        bench::Contender copy{passes([&](uint64_t tail, uint64_t write) {
            for (uint64_t pos = tail; pos < write; pos += kBlock) {
                std::memcpy(block_target.data(), rig.consumer_view.at(pos), std::min(kBlock, write - pos));
                bench::clobber();
            }
            return (write - tail) / size;
        })};
        bench::Contender bulk{passes([&](uint64_t tail, uint64_t write) {
            std::memcpy(bulk_target.data(), rig.consumer_view.at(tail), write - tail);
            bench::clobber();
            return (write - tail) / size;
        })};
        bench::Contender per_event{passes([&](uint64_t tail, uint64_t write) {
            uint64_t events = 0;
            for (uint64_t pos = tail; pos < write; pos += size, ++events) {
                std::memcpy(event_target.data(), rig.consumer_view.at(pos), size);
                bench::clobber();
            }
            return events;
        })};
        bench::Contender block{passes([&](uint64_t, uint64_t) {
            return rig.block->drain([&](const EventView& e) { checksum += e.sequence(); });
        })};

        // Park both readers at write_pos, so every pass starts with a lap to tail_pos.
        rig.refill(batch, row.event_size);
        for (auto e = rig.reader->next(); e && *e; e = rig.reader->next()) {}
        rig.block->drain([](const EventView&) {});

        bench::interleave({&reader, &copy, &bulk, &per_event, &block}, options);
        row.reader_ns = reader.ns;
        row.memcpy_ns = copy.ns;
        row.bulk_ns = bulk.ns;
        row.per_event_ns = per_event.ns;
        row.block_ns = block.ns;
    }
    bench::keep(checksum);

    bench::Table table({"event B", "next() M ev/s", "next() GB/s", "memcpy GB/s", "next()/memcpy", "4 MiB memcpy GB/s",
                        "next()/4 MiB", "per-event copy GB/s", "block drain GB/s", "block/memcpy", "goal", "result"});
    for (const Row& row : rows) {
        auto gbps = [&](const bench::Series& s) { return double(row.event_size) / s.med(); };  // bytes/ns = GB/s
        const double vs_memcpy = bench::ratio_median(row.memcpy_ns, row.reader_ns);            // bandwidth ratio
        const double mps = 1e3 / row.reader_ns.med();
        std::string goal = "-", result = "-";
        if (row.payload == 12) {
            goal = ">= 50 % of memcpy, >= 20 M ev/s";
            result =
                std::string(mps >= 20.0 ? "reached" : "MISSED") + " / " + (vs_memcpy >= 0.5 ? "reached" : "MISSED");
        }
        table.add({std::to_string(row.event_size), bench::fmt("%.1f", mps), bench::fmt("%.2f", gbps(row.reader_ns)),
                   bench::fmt("%.2f", gbps(row.memcpy_ns)), bench::fmt("%.0f %%", 100 * vs_memcpy),
                   bench::fmt("%.2f", gbps(row.bulk_ns)),
                   bench::fmt("%.0f %%", 100 * bench::ratio_median(row.bulk_ns, row.reader_ns)),
                   bench::fmt("%.2f", gbps(row.per_event_ns)), bench::fmt("%.2f", gbps(row.block_ns)),
                   bench::fmt("%.0f %%", 100 * bench::ratio_median(row.memcpy_ns, row.block_ns)), goal, result});
    }
    table.print("Consumer: RingReader::next() drain vs memcpy of the same bytes (4 MiB ring, full)");
    const ReaderStats& s = rig.reader->stats();
    std::printf(
        "\nnext(): %llu events, %llu laps (one per re-fill, by design), %llu torn reads, %llu corrupt skips. "
        "Medians of %zu alternating chunks of ~%.0f ms (thread CPU time).\n",
        (unsigned long long)s.events, (unsigned long long)s.laps, (unsigned long long)s.torn_reads,
        (unsigned long long)s.corrupt_skips, rows[0].reader_ns.values.size(), options.chunk_time * 1e3);
    return 0;
}
