// SequenceRanges: the coalesced set of accounted sequences per (boot, cpu) (DESIGN.md §4.3).
#include <catch2/catch.hpp>
#include <limits>

#include "store/sequence_ranges.hpp"

using eventd::store::SequenceRanges;
using Ranges = std::map<uint64_t, uint64_t>;
using Missing = std::vector<std::pair<uint64_t, uint64_t>>;

namespace {
constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
}

TEST_CASE("an empty set contains nothing and its highest is 0", "[ranges]") {
    SequenceRanges r;
    CHECK(r.empty());
    CHECK_FALSE(r.contains(0));
    CHECK_FALSE(r.contains(1));
    CHECK(r.highest() == 0);
    CHECK(r.missing_within(5, 9) == Missing{{5, 9}});
}

TEST_CASE("disjoint ranges stay separate and ordered", "[ranges]") {
    SequenceRanges r;
    r.add(50, 60);
    r.add(10, 20);
    CHECK(r.ranges() == Ranges{{10, 20}, {50, 60}});
    CHECK(r.highest() == 60);
}

TEST_CASE("adjacent ranges coalesce", "[ranges]") {
    SequenceRanges r;
    r.add(1, 100);
    r.add(101, 200);
    CHECK(r.ranges() == Ranges{{1, 200}});
    r.add(0, 0);  // adjacent on the left
    CHECK(r.ranges() == Ranges{{0, 200}});
}

TEST_CASE("overlapping and contained ranges coalesce", "[ranges]") {
    SequenceRanges r;
    r.add(10, 20);
    r.add(15, 30);
    CHECK(r.ranges() == Ranges{{10, 30}});
    r.add(12, 13);
    CHECK(r.ranges() == Ranges{{10, 30}});
    r.add(5, 40);
    CHECK(r.ranges() == Ranges{{5, 40}});
}

TEST_CASE("a range bridging several ranges merges them all", "[ranges]") {
    SequenceRanges r;
    r.add(1, 10);
    r.add(20, 30);
    r.add(40, 50);
    r.add(60, 70);
    r.add(11, 59);
    CHECK(r.ranges() == Ranges{{1, 70}});
}

TEST_CASE("a single sequence filling a one-wide hole joins both neighbours", "[ranges]") {
    SequenceRanges r;
    r.add(1, 4);
    r.add(6, 9);
    r.add(5, 5);
    CHECK(r.ranges() == Ranges{{1, 9}});
}

TEST_CASE("ranges at the ends of the u64 space do not overflow", "[ranges]") {
    SequenceRanges r;
    r.add(kMax - 1, kMax);
    r.add(kMax - 5, kMax - 2);
    CHECK(r.ranges() == Ranges{{kMax - 5, kMax}});
    r.add(0, 3);
    CHECK(r.ranges() == Ranges{{0, 3}, {kMax - 5, kMax}});
    CHECK(r.contains(kMax));
    CHECK(r.highest() == kMax);
    CHECK(r.missing_within(kMax - 7, kMax) == Missing{{kMax - 7, kMax - 6}});
}

TEST_CASE("contains is true exactly inside the ranges", "[ranges]") {
    SequenceRanges r;
    r.add(10, 20);
    r.add(30, 30);
    CHECK_FALSE(r.contains(9));
    CHECK(r.contains(10));
    CHECK(r.contains(20));
    CHECK_FALSE(r.contains(21));
    CHECK_FALSE(r.contains(29));
    CHECK(r.contains(30));
    CHECK_FALSE(r.contains(31));
}

TEST_CASE("missing_within lists the holes of an interval in order", "[ranges]") {
    SequenceRanges r;
    r.add(10, 20);
    r.add(30, 40);
    CHECK(r.missing_within(1, 50) == Missing{{1, 9}, {21, 29}, {41, 50}});
    CHECK(r.missing_within(15, 35) == Missing{{21, 29}});
    CHECK(r.missing_within(10, 40) == Missing{{21, 29}});
    CHECK(r.missing_within(12, 18).empty());
    CHECK(r.missing_within(21, 29) == Missing{{21, 29}});
    CHECK(r.missing_within(20, 30) == Missing{{21, 29}});
    CHECK(r.missing_within(41, 41) == Missing{{41, 41}});
    CHECK(r.missing_within(9, 5).empty());
}

TEST_CASE("adding another set is the union", "[ranges]") {
    SequenceRanges a;
    a.add(1, 100);
    a.add(201, 300);
    SequenceRanges b;
    b.add(101, 200);
    b.add(400, 500);
    a.add(b);
    CHECK(a.ranges() == Ranges{{1, 300}, {400, 500}});
}

TEST_CASE("sets compare equal by content", "[ranges]") {
    SequenceRanges a;
    a.add(1, 5);
    a.add(6, 10);
    SequenceRanges b;
    b.add(1, 10);
    CHECK(a == b);
}
