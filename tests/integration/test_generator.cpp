// The built-in kernel emitters (`--generate`): trusted in-process writers on every ring.
#include <catch2/catch.hpp>

#include "ring_capture.hpp"
#include "support/shim_fixture.hpp"

using namespace kmes::it;

namespace {
// Events of `reader`'s ring read until `enough` says so, or for at most 5 s.
template <class Enough>
std::vector<CapturedEvent> read_until(kmes::RingReader& reader, Enough enough) {
    std::vector<CapturedEvent> events;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!enough(events) && std::chrono::steady_clock::now() < deadline) {
        reader.wait(std::chrono::milliseconds(100));
        const auto more = drain(reader);
        events.insert(events.end(), more.begin(), more.end());
    }
    return events;
}
}  // namespace

TEST_CASE("generator: --generate writes the configured types and origin class on every ring", "[generator]") {
    constexpr uint32_t kRings = 2;
    auto shim = ShimProcess::start(
        {.cpus = kRings, .extra_args = {"--generate", "rate=1000,payload=64,origin=2,types=a:1+b:1"}});
    for (uint32_t cpu = 0; cpu < kRings; ++cpu) {
        INFO("ring " << cpu);
        auto reader = kmes::RingReader::open(cpu);
        REQUIRE(reader.ok());
        const auto events = read_until(*reader, [](const std::vector<CapturedEvent>& seen) {
            return !of_type(seen, "a").empty() && !of_type(seen, "b").empty();
        });
        CHECK_FALSE(of_type(events, "a").empty());
        CHECK_FALSE(of_type(events, "b").empty());
        CHECK(of_type(events, "a").size() + of_type(events, "b").size() == events.size());
        for (const CapturedEvent& e : events) {
            CHECK(e.view().origin_class() == 2);
            CHECK(e.view().cpu_id() == cpu);
            CHECK(e.view().event_size() - e.view().header_size() == 64);
        }
        CHECK(sequences(events) == one_to(events.size()));  // nothing lost while reading
    }
}

TEST_CASE("generator: count=N writes exactly N events on every ring, then stops", "[generator]") {
    constexpr uint32_t kRings = 3;
    constexpr size_t kCount = 1234;  // not a multiple of the 256-event batch
    auto shim = ShimProcess::start({.cpus = kRings, .extra_args = {"--generate", "rate=0,count=1234,types=c"}});
    for (uint32_t cpu = 0; cpu < kRings; ++cpu) {
        INFO("ring " << cpu);
        auto reader = kmes::RingReader::open(cpu);
        REQUIRE(reader.ok());
        const auto events =
            read_until(*reader, [](const std::vector<CapturedEvent>& seen) { return seen.size() >= kCount; });
        // Nothing more comes after the count: a further wait times out with the ring unchanged.
        CHECK(reader->wait(std::chrono::milliseconds(300)) == kmes::WaitResult::timed_out);
        CHECK(drain(*reader).empty());
        CHECK(sequences(events) == one_to(kCount));
    }
}
