// kmes_emit_batch semantics (PSD-003 §4.1.3): the valid prefix is emitted and counted, a
// batch shares one timestamp and takes consecutive sequences, and emitted_out is left alone
// by failures that happen before step 4.
#include <cerrno>

#include <catch2/catch.hpp>

#include "emit_checks.hpp"
#include "kmes/kmes.h"
#include "support/probe_runner.hpp"
#include "support/shim_fixture.hpp"

using namespace kmes::it;
using nlohmann::json;

namespace {

constexpr uint32_t kBatchRings = 2;

// Entries "batch.<i>" with payload {"i": i}; the storage lives as long as the object.
struct Batch {
    explicit Batch(uint32_t n) {
        for (uint32_t i = 0; i < n; ++i) {
            types.push_back("batch." + std::to_string(i));
            payloads.push_back(msgpack(json{{"i", i}}));
        }
        for (uint32_t i = 0; i < n; ++i)
            entries.push_back(
                {types[i].data(), uint16_t(types[i].size()), payloads[i].data(), uint32_t(payloads[i].size())});
    }
    std::vector<std::string> types;
    std::vector<std::vector<uint8_t>> payloads;
    std::vector<kmes_emit_entry> entries;
};

// The one ring that holds events (a batch is written to a single ring).
std::vector<CapturedEvent> the_nonempty_ring() {
    std::vector<CapturedEvent> found;
    for (auto& ring : capture_rings(kBatchRings)) {
        if (ring.empty()) continue;
        REQUIRE(found.empty());
        found = std::move(ring);
    }
    return found;
}

}  // namespace

TEST_CASE("batch: a failing entry N emits entries 0..N-1, sets emitted_out to N and errno for entry N", "[batch]") {
    auto shim = ShimProcess::start({.cpus = kBatchRings});
    Batch batch(6);
    static const uint8_t invalid[] = {0xc1};
    batch.entries[4].payload = invalid;
    batch.entries[4].payload_len = 1;
    uint32_t emitted = 4242;
    CHECK(kmes_emit_batch(batch.entries.data(), 6, &emitted) == -1);
    CHECK(errno_name(errno) == "EINVAL");
    CHECK(emitted == 4);

    const auto events = the_nonempty_ring();
    REQUIRE(events.size() == 4);
    for (uint32_t i = 0; i < 4; ++i) {
        CHECK(events[i].type() == "batch." + std::to_string(i));
        CHECK(events[i].payload()["i"] == i);
    }
    CHECK(sequences(events) == one_to(4));  // entries 4 and 5 consumed no sequence
}

TEST_CASE("batch: a failure at entry 0 emits nothing and sets emitted_out to 0", "[batch]") {
    auto shim = ShimProcess::start({.cpus = kBatchRings});
    Batch batch(3);
    batch.entries[0].event_type_len = 0;
    uint32_t emitted = 4242;
    CHECK(kmes_emit_batch(batch.entries.data(), 3, &emitted) == -1);
    CHECK(errno_name(errno) == "EINVAL");
    CHECK(emitted == 0);
    require_no_sequence_gap(kBatchRings, 0);
}

TEST_CASE("batch: a full batch of 256 shares one timestamp and takes consecutive sequences in entry order", "[batch]") {
    auto shim = ShimProcess::start({.cpus = kBatchRings});
    REQUIRE(emit("before", json::object()) == 0);  // the batch must continue a ring's numbering
    REQUIRE(emit("before", json::object()) == 0);
    Batch batch(256);
    uint32_t emitted = 0;
    REQUIRE(kmes_emit_batch(batch.entries.data(), 256, &emitted) == 0);
    CHECK(emitted == 256);

    std::vector<CapturedEvent> events;
    for (auto& ring : capture_rings(kBatchRings)) {
        auto mine = of_type(ring, "batch.0");
        if (mine.empty()) continue;
        for (const auto& e : ring)
            if (e.type().rfind("batch.", 0) == 0) events.push_back(e);
    }
    REQUIRE(events.size() == 256);
    const uint64_t first = events[0].sequence();
    for (uint32_t i = 0; i < 256; ++i) {
        INFO("entry " << i);
        CHECK(events[i].type() == "batch." + std::to_string(i));
        CHECK(events[i].sequence() == first + i);
        CHECK(events[i].view().timestamp() == events[0].view().timestamp());
        CHECK(events[i].view().cpu_id() == events[0].view().cpu_id());
    }
}

TEST_CASE("batch: emitted_out is untouched when the batch fails before §4.1.3 step 4", "[batch]") {
    auto shim =
        ShimProcess::start({.config = {{"EmitGroup", kEmitGid}, {"MaxEmitRatePerProcess", 100}}, .cpus = kBatchRings});
    SECTION("EINVAL for the count") {
        Batch batch(1);
        for (uint32_t count : {0u, 257u}) {
            uint32_t emitted = 4242;
            CHECK(kmes_emit_batch(batch.entries.data(), count, &emitted) == -1);
            CHECK(errno_name(errno) == "EINVAL");
            CHECK(emitted == 4242);
        }
    }
    SECTION("EPERM") {
        const ProbeRun run = run_probe(as_nobody(), {"batch:5"});
        INFO(run.output());
        CHECK(run.get("batch", "err") == "EPERM");
        CHECK(run.get("batch", "emitted_out") == "777777");  // the probe's "untouched" marker
    }
    SECTION("EAGAIN") {
        const ProbeRun run = run_probe(as_nobody({kEmitGid}), {"batch:100", "batch:5"});
        INFO(run.output());
        CHECK(run.get("batch", "emitted_out", 0) == "100");
        CHECK(run.get("batch", "err", 1) == "EAGAIN");
        CHECK(run.get("batch", "emitted_out", 1) == "777777");
    }
}

TEST_CASE("batch: a batch that does not fit the tokens left emits nothing (EAGAIN, all or nothing)", "[batch]") {
    auto shim =
        ShimProcess::start({.config = {{"EmitGroup", kEmitGid}, {"MaxEmitRatePerProcess", 100}}, .cpus = kBatchRings});
    const ProbeRun run = run_probe(as_nobody({kEmitGid}), {"batch:60", "batch:60", "batch:30"});
    INFO(run.output());
    CHECK(run.get("batch", "emitted_out", 0) == "60");
    CHECK(run.get("batch", "err", 1) == "EAGAIN");  // 40 tokens left: the 60 are not partly emitted
    CHECK(run.get("batch", "rc", 2) == "0");        // and the 40 are still there
    require_no_sequence_gap(kBatchRings, 90);
}
