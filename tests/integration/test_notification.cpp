// Notification across processes (§5.1.9.2 in the order of DESIGN.md §7): a reader asleep
// on the ring's futex wakes when another process emits.
#include <catch2/catch.hpp>

#include "probe_runner.hpp"
#include "ring_capture.hpp"
#include "shim_fixture.hpp"

using namespace kmes::it;

TEST_CASE("notification: a reader asleep in wait(2 s) wakes when another process emits", "[notification]") {
    auto shim = ShimProcess::start({.config = {{"EmitGroup", kEmitGid}}, .cpus = 1});
    auto reader = kmes::RingReader::open(0, {.start = kmes::StartAt::end});
    REQUIRE(reader.ok());
    const auto emitter = GENERATE(as<std::string>{}, "root", "nobody");
    INFO("emitter " << emitter);
    // The probe emits after 200 ms, long after the reader below went to sleep.
    BackgroundProbe probe(emitter == "root" ? std::vector<std::string>{} : as_nobody({kEmitGid}),
                          {"sleep:200", "emit:1:wake.up"});
    const auto start = std::chrono::steady_clock::now();
    const kmes::WaitResult result = reader->wait(std::chrono::seconds(2));
    const auto waited = std::chrono::steady_clock::now() - start;
    const ProbeRun run = probe.finish();
    INFO(run.output());
    CHECK(result == kmes::WaitResult::woken);
    CHECK(reader->stats().sleeps == 1);
    CHECK(waited < std::chrono::seconds(2));
    const auto events = drain(*reader);
    REQUIRE(events.size() == 1);
    CHECK(events[0].type() == "wake.up");
}

TEST_CASE("notification: a reader whose ring stays empty times out", "[notification]") {
    auto shim = ShimProcess::start({.cpus = 2});
    auto reader = kmes::RingReader::open(1, {.start = kmes::StartAt::end});
    REQUIRE(reader.ok());
    CHECK(reader->wait(std::chrono::milliseconds(100)) == kmes::WaitResult::timed_out);
}
