// A budget of log lines for what callers trigger (issue 40): a refused connection, a refused
// message. A hostile peer can trigger such a line as fast as it can connect or publish; logging
// each one floods the journal, whose rate limit then suppresses the daemon's own messages too.
// So the first `lines_per_minute` of a minute are logged one by one, the rest counted, and the
// count reported once that minute is over. Not thread-safe: its owner's thread or lock.
#pragma once

#include <chrono>
#include <cstdint>

namespace base {

class LogBudget {
public:
    using Clock = std::chrono::steady_clock;

    explicit LogBudget(uint64_t lines_per_minute) : lines_per_minute_(lines_per_minute) {}

    // Whether to log this occurrence (false: it is counted among the unlogged ones).
    // `overdue` is set to take_unlogged(): the count of the minute just ended, to report first.
    bool take(uint64_t& overdue, Clock::time_point now = Clock::now()) {
        overdue = take_unlogged(now);
        if (logged_ >= lines_per_minute_) {
            ++unlogged_;
            return false;
        }
        if (logged_++ == 0) minute_start_ = now;
        return true;
    }

    // Once the minute of the first logged line is over: how many went unlogged in it (then the
    // budget starts again). 0 before that, or when none went unlogged. Call it now and then
    // (a loop's idle turn) so the count is reported even when nothing more is triggered.
    uint64_t take_unlogged(Clock::time_point now = Clock::now()) {
        if (logged_ == 0 || now - minute_start_ < std::chrono::minutes(1)) return 0;
        const uint64_t unlogged = unlogged_;
        logged_ = 0;
        unlogged_ = 0;
        return unlogged;
    }

private:
    const uint64_t lines_per_minute_;
    Clock::time_point minute_start_{};
    uint64_t logged_ = 0;
    uint64_t unlogged_ = 0;
};

}  // namespace base
