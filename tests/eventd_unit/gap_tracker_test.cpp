// GapTracker (PSD-008 §2.5; DESIGN.md §3): which events to store, which to skip, and which
// sequence ranges are lost — in a fresh boot, across a restart, and around holes that
// independently committing shards can leave after a crash.
#include <catch2/catch.hpp>

#include "eventd/ingest/gap_tracker.hpp"

using eventd::Gap;
using eventd::GapTracker;
using eventd::store::SequenceRanges;

namespace {
SequenceRanges ranges(std::initializer_list<std::pair<uint64_t, uint64_t>> list) {
    SequenceRanges r;
    for (auto [first, last] : list) r.add(first, last);
    return r;
}
}  // namespace

TEST_CASE("a fresh boot stores consecutive sequences and reports no gap", "[gap_tracker]") {
    GapTracker t;
    for (uint64_t s = 1; s <= 5; ++s) {
        const auto d = t.observe(s, 1000 + s);
        CHECK(d.store);
        CHECK(d.gaps.empty());
    }
    CHECK(t.highest() == 5);
}

TEST_CASE("a sequence jump reports exactly the missing range with the last seen timestamp", "[gap_tracker]") {
    GapTracker t;
    t.observe(1, 111);
    const auto d = t.observe(5, 555);
    CHECK(d.store);
    REQUIRE(d.gaps.size() == 1);
    CHECK(d.gaps[0].first == 2);
    CHECK(d.gaps[0].last == 4);
    REQUIRE(d.gaps[0].last_seen_timestamp);
    CHECK(*d.gaps[0].last_seen_timestamp == 111);
}

TEST_CASE("the first event of a boot after lost ones reports the loss from sequence 1", "[gap_tracker]") {
    GapTracker t;
    const auto d = t.observe(40, 4000);
    REQUIRE(d.gaps.size() == 1);
    CHECK(d.gaps[0].first == 1);
    CHECK(d.gaps[0].last == 39);
    CHECK_FALSE(d.gaps[0].last_seen_timestamp);
}

TEST_CASE("a restart skips accounted sequences still in the ring and stores the rest", "[gap_tracker]") {
    GapTracker t(ranges({{1, 100}}));
    for (uint64_t s = 50; s <= 100; ++s) {
        const auto d = t.observe(s, s);
        CHECK_FALSE(d.store);
        CHECK(d.gaps.empty());
    }
    const auto d = t.observe(101, 101);
    CHECK(d.store);
    CHECK(d.gaps.empty());
}

TEST_CASE("a restart whose ring was overwritten meanwhile reports the restart gap", "[gap_tracker]") {
    GapTracker t(ranges({{1, 100}}));
    const auto d = t.observe(120, 1200);
    CHECK(d.store);
    REQUIRE(d.gaps.size() == 1);
    CHECK(d.gaps[0].first == 101);
    CHECK(d.gaps[0].last == 119);
}

TEST_CASE("holes between committed ranges are stored when still in the ring and reported when not", "[gap_tracker]") {
    // Two shards of one CPU committed 1..100 and 201..300; 101..200 died with a crash.
    GapTracker t(ranges({{1, 100}, {201, 300}}));
    auto d = t.observe(150, 150);  // 101..149 were overwritten meanwhile
    CHECK(d.store);
    REQUIRE(d.gaps.size() == 1);
    CHECK(d.gaps[0].first == 101);
    CHECK(d.gaps[0].last == 149);
    for (uint64_t s = 151; s <= 200; ++s) CHECK(t.observe(s, s).store);
    for (uint64_t s = 201; s <= 300; ++s) CHECK_FALSE(t.observe(s, s).store);
    d = t.observe(301, 301);
    CHECK(d.store);
    CHECK(d.gaps.empty());
}

TEST_CASE("a gap spanning an accounted range reports only the unaccounted parts", "[gap_tracker]") {
    GapTracker t(ranges({{10, 20}}));
    const auto d = t.observe(30, 30);
    REQUIRE(d.gaps.size() == 2);
    CHECK((d.gaps[0].first == 1 && d.gaps[0].last == 9));
    CHECK((d.gaps[1].first == 21 && d.gaps[1].last == 29));
}

TEST_CASE("the boot-started marker (sequence 0) is not a gap", "[gap_tracker]") {
    GapTracker t(ranges({{0, 0}}));
    const auto d = t.observe(1, 1);
    CHECK(d.store);
    CHECK(d.gaps.empty());
}

TEST_CASE("an event read twice (re-scan after a resize) is stored once", "[gap_tracker]") {
    GapTracker t;
    CHECK(t.observe(1, 1).store);
    CHECK(t.observe(2, 2).store);
    CHECK_FALSE(t.observe(2, 2).store);
}
