// base::LogBudget (issue 40): the first lines of a minute logged, the rest counted and reported
// once that minute is over — never lost, never a line each.
#include <catch2/catch.hpp>

#include "base/log_budget.hpp"

namespace {

using base::LogBudget;
using std::chrono::seconds;

TEST_CASE("a log budget logs the first lines of a minute and counts the rest") {
    LogBudget budget(3);
    const auto t0 = LogBudget::Clock::time_point{} + std::chrono::hours(1);
    uint64_t overdue = 99;
    for (int i = 0; i < 3; ++i) {
        CHECK(budget.take(overdue, t0 + seconds(i)));
        CHECK(overdue == 0);
    }
    for (int i = 0; i < 5; ++i) CHECK_FALSE(budget.take(overdue, t0 + seconds(10)));
    CHECK(budget.take_unlogged(t0 + seconds(59)) == 0);  // the minute is not over
    // The minute of the first line is over: its five unlogged ones are reported once.
    CHECK(budget.take_unlogged(t0 + seconds(60)) == 5);
    CHECK(budget.take_unlogged(t0 + seconds(61)) == 0);
    CHECK(budget.take(overdue, t0 + seconds(62)));
    CHECK(overdue == 0);
}

TEST_CASE("a log budget reports the unlogged count with the next line when nobody asked for it") {
    LogBudget budget(1);
    const auto t0 = LogBudget::Clock::time_point{} + std::chrono::hours(1);
    uint64_t overdue = 0;
    CHECK(budget.take(overdue, t0));
    CHECK_FALSE(budget.take(overdue, t0 + seconds(1)));
    CHECK_FALSE(budget.take(overdue, t0 + seconds(2)));
    CHECK(budget.take(overdue, t0 + seconds(75)));  // a new minute: this one is logged …
    CHECK(overdue == 2);                            // … after the two the last one did not log
    CHECK(budget.take_unlogged(t0 + seconds(200)) == 0);
}

}  // namespace
