// kmes.json handling (PSD-003 §6.1, DESIGN.md §2): invalid values ignored with a
// `kmes.config_rejected` self-event; the late "registry" (ConfigDelayMs) and runtime changes
// (SIGHUP, inotify) swap the rings (§5.1.9.4) under a reader that loses nothing.
#include <csignal>
#include <thread>

#include <catch2/catch.hpp>

#include "kmes/kmes.h"
#include "ring_capture.hpp"
#include "support/eventually.hpp"
#include "support/shim_fixture.hpp"

using namespace kmes::it;
using nlohmann::json;

namespace {

constexpr auto kApplyTimeout = std::chrono::seconds(5);

void emit_numbered(const std::string& prefix, int count) {
    for (int i = 0; i < count; ++i) REQUIRE(emit(prefix + "." + std::to_string(i), json{{"i", i}}) == 0);
}

std::vector<std::string> types(const std::vector<CapturedEvent>& events) {
    std::vector<std::string> out;
    for (const auto& e : events) out.push_back(e.type());
    return out;
}

std::vector<std::string> numbered(const std::string& prefix, int from, int to) {
    std::vector<std::string> out;
    for (int i = from; i < to; ++i) out.push_back(prefix + "." + std::to_string(i));
    return out;
}

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

}  // namespace

TEST_CASE("config: each invalid value is ignored and leaves a kmes.config_rejected self-event", "[config]") {
    auto shim = ShimProcess::start(
        {.config = {{"BufferCapacity", 1000}, {"MaxEventSize", 5}, {"MaxNestingDepth", "deep"}}, .cpus = 2});
    const auto rejected = of_type(all_events(2), "kmes.config_rejected");
    REQUIRE(rejected.size() == 3);
    std::map<std::string, json> by_key;
    for (const CapturedEvent& e : rejected) {
        CHECK(e.view().origin_class() == KMES_ORIGIN_KMES);
        const json payload = e.payload();
        REQUIRE(payload.is_object());
        REQUIRE(payload.contains("key"));
        by_key[payload["key"].get<std::string>()] = payload;
    }
    CHECK(by_key["BufferCapacity"]["rejected_value"] == 1000);
    CHECK(by_key["BufferCapacity"]["retained_value"] == KMES_DEFAULT_BUFFER_CAPACITY);
    CHECK(by_key["MaxEventSize"]["rejected_value"] == 5);
    CHECK(by_key["MaxEventSize"]["retained_value"] == 65536);
    CHECK(by_key["MaxNestingDepth"]["rejected_value"] == "deep");
    CHECK(by_key["MaxNestingDepth"]["retained_value"] == 32);

    // The retained values are the ones in force.
    CHECK(attach_capacity(0) == KMES_DEFAULT_BUFFER_CAPACITY);
    CHECK(emit("fits.default.max", msgpack_of_size(2000)) == 0);  // MaxEventSize 5 would refuse it
    CHECK(emit("nested.20", nested_arrays(20)) == 0);             // depth 32 in force
}

TEST_CASE("config: unknown keys are ignored without a self-event", "[config]") {
    auto shim = ShimProcess::start({.config = {{"NoSuchKey", 1}, {"MaxEventSize", 2048}}, .cpus = 2});
    CHECK(of_type(all_events(2), "kmes.config_rejected").empty());
    CHECK(errno_name(emit("big", msgpack_of_size(3000))) == "ENOSPC");  // the valid key next to it applied
}

TEST_CASE("config: a late configuration swaps the boot rings under a reader without loss or duplicate", "[config]") {
    auto shim = ShimProcess::start(
        {.config = {{"BufferCapacity", 131072}, {"ConfigDelayMs", 500}}, .cpus = 1, .wait_configured = false});
    // Boot rings (§6.1.3 step 1): attachable at once, compiled-in capacity, generation 1.
    auto old_ring = attach_ring(0);
    auto reader = kmes::RingReader::open(0);
    REQUIRE(reader.ok());
    CHECK(reader->capacity() == KMES_DEFAULT_BUFFER_CAPACITY);
    CHECK(reader->generation() == 1);

    emit_numbered("early", 20);
    std::vector<CapturedEvent> delivered;
    for (int i = 0; i < 10; ++i) {
        auto next = reader->next();
        REQUIRE(next.ok());
        REQUIRE(next->has_value());
        const auto bytes = (**next).bytes();
        delivered.push_back({std::vector<uint8_t>(bytes.begin(), bytes.end())});
    }
    REQUIRE(ring_generation(old_ring) == 1);  // all of this happened before the swap

    std::string why;
    if (!shim->wait_notification("rings of 131072", std::chrono::seconds(10), &why)) FAIL(why);
    CHECK(ring_generation(old_ring) != 1);  // the old ring's generation was bumped after the switch
    CHECK(attach_capacity(0) == 131072);
    emit_numbered("late", 20);

    const auto rest = drain(*reader);
    delivered.insert(delivered.end(), rest.begin(), rest.end());
    CHECK(types(delivered) == concat(numbered("early", 0, 20), numbered("late", 0, 20)));
    CHECK(sequences(delivered) == one_to(40));
    CHECK(reader->stats().generation_changes == 1);
    CHECK(reader->capacity() == 131072);
    CHECK(reader->generation() == 2);
}

TEST_CASE("config: SIGHUP re-reads the configuration and resizes the rings", "[config]") {
    auto shim = ShimProcess::start({.config = {{"BufferCapacity", 131072}}, .cpus = 1, .config_via_symlink = true});
    auto reader = kmes::RingReader::open(0);
    REQUIRE(reader.ok());
    REQUIRE(reader->capacity() == 131072);
    emit_numbered("before", 5);

    // The symlink target lies outside the watched directory: only the signal can reveal it.
    shim->write_config({{"BufferCapacity", 262144}});
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    REQUIRE(attach_capacity(0) == 131072);
    shim->signal(SIGHUP);
    REQUIRE(wait_for_capacity(0, 262144, kApplyTimeout));
    emit_numbered("after", 5);

    const auto events = drain(*reader);
    CHECK(types(events) == concat(numbered("before", 0, 5), numbered("after", 0, 5)));
    CHECK(sequences(events) == one_to(10));
    CHECK(reader->capacity() == 262144);
    CHECK(reader->stats().generation_changes == 1);
}

TEST_CASE("config: rewriting the configuration file resizes the rings (inotify)", "[config]") {
    auto shim = ShimProcess::start({.config = {{"BufferCapacity", 131072}}, .cpus = 1});
    auto reader = kmes::RingReader::open(0);
    REQUIRE(reader.ok());
    emit_numbered("first", 5);
    shim->write_config({{"BufferCapacity", 262144}});
    REQUIRE(wait_for_capacity(0, 262144, kApplyTimeout));
    emit_numbered("second", 5);
    auto events = drain(*reader);  // the reader follows each swap it sees (one here)
    CHECK(reader->capacity() == 262144);

    shim->write_config({{"BufferCapacity", 65536}});  // and down again
    REQUIRE(wait_for_capacity(0, 65536, kApplyTimeout));
    emit_numbered("third", 5);
    const auto rest = drain(*reader);
    events.insert(events.end(), rest.begin(), rest.end());

    CHECK(types(events) == concat(concat(numbered("first", 0, 5), numbered("second", 0, 5)), numbered("third", 0, 5)));
    CHECK(sequences(events) == one_to(15));
    CHECK(reader->capacity() == 65536);
    CHECK(reader->stats().generation_changes == 2);
}

TEST_CASE("config: a malformed file at start keeps the defaults and the shim runs", "[config]") {
    auto shim = ShimProcess::start({.raw_config = "{ \"BufferCapacity\": 131072, oops", .cpus = 1});
    CHECK(attach_capacity(0) == KMES_DEFAULT_BUFFER_CAPACITY);
    CHECK(emit("still.works", json::object()) == 0);
    CHECK(capture_ring(0).size() == 1);
    CHECK(shim->log().find("not valid JSON") != std::string::npos);
}

TEST_CASE("config: a malformed file at runtime keeps the values in force", "[config]") {
    auto shim = ShimProcess::start({.config = {{"BufferCapacity", 131072}}, .cpus = 1});
    shim->write_raw_config("{ \"BufferCapacity\": 262144,");
    REQUIRE(test_support::eventually([&] { return shim->log().find("not valid JSON") != std::string::npos; },
                                     kApplyTimeout, std::chrono::milliseconds(10)));
    CHECK(attach_capacity(0) == 131072);
    CHECK(emit("still.works", json::object()) == 0);
    shim->write_config({{"BufferCapacity", 262144}});  // and the next good file applies
    CHECK(wait_for_capacity(0, 262144, kApplyTimeout));
}
