// kmes::audit::SerialTracker (issue 40 item 7): the kernel's audit serials as a sequence — a
// serial missing for the window is a hole, reported once; one arriving within it fills its
// place; the 32-bit counter's wrap is no hole.
#include <catch2/catch.hpp>

#include "audit/serial_tracker.hpp"

namespace {

using kmes::audit::SerialTracker;
using Ranges = std::vector<SerialTracker::Range>;
using std::chrono::milliseconds;

const SerialTracker::Clock::time_point t0 = SerialTracker::Clock::time_point{} + std::chrono::hours(1);

TEST_CASE("serials in order, with repeats, leave no hole") {
    SerialTracker t(milliseconds(1000));
    for (uint32_t s = 100; s < 200; ++s)
        for (int record = 0; record < 3; ++record) t.saw(s, t0);  // every record of an event carries it
    CHECK(t.expired(t0 + milliseconds(5000)).empty());
    CHECK(t.flush().empty());
}

TEST_CASE("a missing serial is a hole once the window is over, reported once") {
    SerialTracker t(milliseconds(1000));
    t.saw(10, t0);
    t.saw(11, t0);
    t.saw(15, t0 + milliseconds(100));  // 12…14 missing, noticed now
    t.saw(16, t0 + milliseconds(200));
    t.saw(20, t0 + milliseconds(300));  // 17…19 missing
    CHECK(t.expired(t0 + milliseconds(1099)).empty());
    CHECK(t.expired(t0 + milliseconds(1100)) == Ranges{{12, 14}});
    CHECK(t.expired(t0 + milliseconds(1300)) == Ranges{{17, 19}});
    CHECK(t.expired(t0 + milliseconds(9000)).empty());
    CHECK(t.late_after_report() == 0);
}

TEST_CASE("a serial arriving out of order within the window fills its place, and the disorder is measured") {
    SerialTracker t(milliseconds(1000));
    t.saw(1, t0);
    t.saw(4, t0 + milliseconds(10));  // 2, 3 missing
    t.saw(2, t0 + milliseconds(30));  // late by 2 serials, 20 ms
    t.saw(5, t0 + milliseconds(40));
    CHECK(t.max_lateness_serials() == 2);  // 2 arrived when 4 was the highest
    CHECK(t.max_lateness() == milliseconds(20));
    CHECK(t.expired(t0 + milliseconds(2000)) == Ranges{{3, 3}});
    // 3 after its hole was reported: counted as late (the window was too short), once.
    t.saw(3, t0 + milliseconds(2100));
    t.saw(3, t0 + milliseconds(2100));
    CHECK(t.late_after_report() == 1);
}

TEST_CASE("the kernel's 32-bit serial wraps without a hole; a hole across the wrap is split") {
    SerialTracker t(milliseconds(1000));
    t.saw(0xfffffffe, t0);
    t.saw(0xffffffff, t0);
    t.saw(0, t0);
    t.saw(1, t0);
    CHECK(t.flush().empty());
    t.saw(5, t0);  // 2…4
    CHECK(t.flush() == Ranges{{2, 4}});

    SerialTracker across(milliseconds(1000));
    across.saw(0xfffffffd, t0);
    across.saw(2, t0);  // 0xfffffffe, 0xffffffff, 0, 1 missing
    CHECK(across.flush() == Ranges{{0xfffffffe, 0xffffffff}, {0, 1}});
}

TEST_CASE("what came before the first serial seen is not the tracker's to account") {
    SerialTracker t(milliseconds(1000));
    t.saw(5000, t0);
    t.saw(4990, t0);  // a late record of an event from before this reader came in
    CHECK(t.flush().empty());
    CHECK(t.late_after_report() == 0);
}

}  // namespace
