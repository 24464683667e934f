// Notification across processes (§5.1.9.2 in the order of DESIGN.md §7): a reader asleep
// on the ring's futex wakes when another process emits.
#include <atomic>
#include <thread>

#include <catch2/catch.hpp>

#include "support/probe_runner.hpp"
#include "ring_capture.hpp"
#include "support/shim_fixture.hpp"
#include "thread_state.hpp"

using namespace kmes::it;

TEST_CASE("notification: a reader asleep in wait(2 s) wakes when another process emits", "[notification]") {
    auto shim = ShimProcess::start({.config = {{"EmitGroup", kEmitGid}}, .cpus = 1});
    auto reader = kmes::RingReader::open(0, {.start = kmes::StartAt::end});
    REQUIRE(reader.ok());
    const auto emitter = GENERATE(as<std::string>{}, "root", "nobody");
    INFO("emitter " << emitter);
    // The reader sleeps on its own thread; the probe is started once it is blocked in futex_wait.
    kmes::WaitResult result = kmes::WaitResult::data_ready;
    std::chrono::steady_clock::duration waited{};
    std::atomic<pid_t> reader_tid{0};
    std::thread sleeper([&] {
        reader_tid.store(kmes::test::current_tid());
        const auto start = std::chrono::steady_clock::now();
        result = reader->wait(std::chrono::seconds(2));
        waited = std::chrono::steady_clock::now() - start;
    });
    while (reader_tid.load() == 0) std::this_thread::yield();
    CHECK(kmes::test::wait_until_in_futex(reader_tid.load()));
    BackgroundProbe probe(emitter == "root" ? std::vector<std::string>{} : as_nobody({kEmitGid}),
                          {"emit:1:wake.up"});
    sleeper.join();
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
