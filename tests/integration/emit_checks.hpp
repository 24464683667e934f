// Assertions shared by the emission tests.
#pragma once

#include <cstdint>

#include <catch2/catch.hpp>

#include "ring_capture.hpp"

namespace kmes::it {

// Every ring holds sequences 1..n with no gap — rejected calls consumed none (§7.1.2) —
// and `total` events in all.
inline void require_no_sequence_gap(uint32_t cpus, size_t total) {
    size_t seen = 0;
    for (uint32_t cpu = 0; cpu < cpus; ++cpu) {
        const auto events = capture_ring(cpu);
        INFO("ring " << cpu);
        CHECK(sequences(events) == one_to(events.size()));
        seen += events.size();
    }
    CHECK(seen == total);
}

}  // namespace kmes::it
