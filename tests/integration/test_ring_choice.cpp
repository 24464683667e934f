// Which ring an emit lands on (DESIGN.md §2): the CPU the calling thread ran on, modulo the
// ring count — so `taskset -c N` puts events on ring N. Ring count may exceed the cores.
#include <unistd.h>

#include <cerrno>

#include <catch2/catch.hpp>

#include "kmes/kmes.h"
#include "support/probe_runner.hpp"
#include "skip_test.hpp"
#include "ring_capture.hpp"
#include "support/shim_fixture.hpp"

using namespace kmes::it;

TEST_CASE("ring choice: an emitter pinned to cpu 1 writes ring 1 with cpu_id 1 in the header", "[ring-choice]") {
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2) skip_test("ring choice needs two online CPUs");
    auto shim = ShimProcess::start({.cpus = 2});
    const ProbeRun one = run_probe(on_cpu(1), {"emit:3:pinned.one"});
    const ProbeRun zero = run_probe(on_cpu(0), {"emit:2:pinned.zero"});
    INFO(one.output() << zero.output());
    REQUIRE(one.get("emit", "ok") == "3");
    REQUIRE(zero.get("emit", "ok") == "2");

    const auto rings = capture_rings(2);
    CHECK(of_type(rings[1], "pinned.one").size() == 3);
    CHECK(of_type(rings[0], "pinned.one").empty());
    CHECK(of_type(rings[0], "pinned.zero").size() == 2);
    CHECK(of_type(rings[1], "pinned.zero").empty());
    for (uint32_t cpu = 0; cpu < 2; ++cpu)
        for (const auto& e : rings[cpu]) CHECK(e.view().cpu_id() == cpu);
}

TEST_CASE("ring choice: with more rings than cores the extra rings exist and are attachable", "[ring-choice]") {
    auto shim = ShimProcess::start({.cpus = 4});
    for (uint32_t cpu : {2u, 3u}) {
        auto ring = attach_ring(cpu);
        CHECK(ring_cpu_id(ring) == cpu);
        CHECK(ring_generation(ring) == 1);
        auto reader = kmes::RingReader::open(cpu);
        CHECK(reader.ok());
    }
    uint64_t capacity = 0;
    CHECK(kmes_attach(4, &capacity) == -1);
    CHECK(errno_name(errno) == "EINVAL");
}

TEST_CASE("ring choice: with fewer rings than cpus an emitter writes ring cpu % count", "[ring-choice]") {
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2) skip_test("ring choice needs two online CPUs");
    auto shim = ShimProcess::start({.cpus = 1});
    const ProbeRun run = run_probe(on_cpu(1), {"emit:1:wrapped"});
    INFO(run.output());
    REQUIRE(run.get("emit", "ok") == "1");
    const auto events = capture_ring(0);
    REQUIRE(of_type(events, "wrapped").size() == 1);
    CHECK(of_type(events, "wrapped")[0].view().cpu_id() == 0);
}
