// Benchmark 1 (docs/PERFORMANCE.md): the producer's write path, RingSet::write — writer
// lock, one CLOCK_REALTIME read per call, sequence, tail_pos walk over the overwritten
// event, header + type + identity + payload copy, write_pos release store, the full fence and
// the need_wake check — on a 4 MiB ring with no consumer, so every event overwrites an old one.
//
// The floor is what any producer must do: clock_gettime(CLOCK_REALTIME) and a memcpy of the
// event's bytes into a 4 MiB circular buffer. A batch shares one clock read (§3.1.8), so the
// batched floor is one clock read + 256 memcpys.
#include <time.h>

#include <memory>
#include <span>
#include <string>

#include "../kmes-shim/shimd/ring_set.hpp"
#include "harness.hpp"

using namespace kmes::shim;

namespace {

constexpr uint64_t kCapacity = 4u << 20;
constexpr std::string_view kType = "bench.event";  // 11 bytes, like a typical dotted type

uint64_t realtime_ns() {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
}

// The floor's stand-in for a ring: a 4 MiB buffer written circularly, contiguous thanks to
// max_event bytes of slack (the real ring gets the same from its double mapping).
class FloorRing {
public:
    explicit FloorRing(size_t max_event) : buffer_(kCapacity + max_event, 0) {}
    void write(const uint8_t* event, size_t size, uint64_t timestamp) {
        uint8_t* out = buffer_.data() + (pos_ & (kCapacity - 1));
        std::memcpy(out, event, size);
        std::memcpy(out + KMES_HDR_TIMESTAMP, &timestamp, sizeof timestamp);
        pos_ += size;
    }

private:
    std::vector<uint8_t> buffer_;
    uint64_t pos_ = 0;
};

struct Case {
    size_t payload;
    uint32_t batch;
};

struct Row {
    Case c;
    uint64_t event_size;
    bench::Series write_ns, floor_ns;
};

}  // namespace

int main(int argc, char** argv) {
    const bench::Options options = bench::Options::parse(argc, argv);
    auto rings = RingSet::create(1, kCapacity, RingOptions{});
    if (!rings) {
        std::fprintf(stderr, "RingSet::create: %s\n", rings.error().message.c_str());
        return 1;
    }
    Identity identity;
    identity.process.fill(0x5a);  // any non-zero stamp; the copy costs the same

    std::vector<Row> rows;
    for (size_t payload : {size_t{64}, size_t{512}})
        for (uint32_t batch : {1u, KMES_MAX_BATCH}) rows.push_back(Row{Case{payload, batch}, 0, {}, {}});

    bench::Contender clock_only{bench::loop_of([] { bench::keep(realtime_ns()); })};
    bench::interleave({&clock_only}, options);
    for (Row& row : rows) {
        const std::vector<uint8_t> payload(row.c.payload, 0xab);
        const EventInput input{kType, payload};
        const std::vector<EventInput> events(row.c.batch, input);
        row.event_size = event_size_of(input);

        // The floor copies a whole pre-built event of the same size.
        const std::vector<uint8_t> image(row.event_size, 0xcd);
        volatile size_t opaque_size = row.event_size;  // a runtime size, as in the ring
        const size_t size = opaque_size;
        FloorRing floor(size);

        // Fill the ring once so every timed write overwrites (steady state).
        for (uint64_t written = 0; written < 2 * kCapacity; written += size * row.c.batch)
            (*rings)->write(0, KMES_ORIGIN_USERSPACE, events, identity);
        for (uint64_t written = 0; written < 2 * kCapacity; written += size) floor.write(image.data(), size, 0);

        // One operation = one call: a single event, or a batch sharing one clock read.
        bench::Contender floor_side{bench::loop_of([&] {
            const uint64_t ts = realtime_ns();
            for (uint32_t i = 0; i < row.c.batch; ++i) floor.write(image.data(), size, ts);
        })};
        bench::Contender write_side{
            bench::loop_of([&] { (*rings)->write(0, KMES_ORIGIN_USERSPACE, events, identity); })};
        bench::interleave({&floor_side, &write_side}, options);
        for (double ns : floor_side.ns.values) row.floor_ns.add(ns / row.c.batch);
        for (double ns : write_side.ns.values) row.write_ns.add(ns / row.c.batch);
    }

    bench::Table table({"case", "event B", "write ns/ev", "M ev/s", "floor ns/ev", "write/floor", "goal", "result"});
    for (const Row& row : rows) {
        const double ratio = bench::ratio_median(row.write_ns, row.floor_ns);
        const double mps = 1e3 / row.write_ns.med();
        std::string goal = "-", result = "-";
        if (row.c.batch == 1) {
            goal = "<= 2.0x floor";
            result = bench::verdict(ratio <= 2.0);
        } else if (row.c.payload == 64) {
            goal = ">= 20 M ev/s";
            result = bench::verdict(mps >= 20.0);
        }
        table.add({(row.c.batch == 1 ? "single, " : "batch 256, ") + std::to_string(row.c.payload) + " B payload",
                   std::to_string(row.event_size), bench::fmt("%.1f", row.write_ns.med()), bench::fmt("%.1f", mps),
                   bench::fmt("%.1f", row.floor_ns.med()), bench::fmt("%.2fx", ratio), goal, result});
    }
    table.print("Producer: RingSet::write vs clock_gettime + memcpy (4 MiB ring, no consumer, overwriting)");
    std::printf(
        "\nclock_gettime(CLOCK_REALTIME) alone: %.1f ns. Medians of %zu alternating chunks of ~%.0f ms per case.\n",
        clock_only.ns.med(), rows[0].write_ns.values.size(), options.chunk_time * 1e3);
    return 0;
}
