// Log lines a query client triggers (issue 40): a refused EVENTS INDEX, a dropped stream. One
// local user could otherwise write thousands of lines a second into the journal, whose rate
// limit then suppresses eventd's own messages. Each uid gets its own budget (base/log_budget.hpp:
// ten lines a minute, then a count), so one caller's flood never silences another's line; the
// caller's text is escaped (base/display_escape.hpp) so a line stays one line.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include <spdlog/spdlog.h>

#include "base/log_budget.hpp"

namespace eventd::server {

class CallerLog {
public:
    static constexpr uint64_t kLinesPerMinute = 10;

    // `line` at info level, within `uid`'s budget; the caller's text in it must be escaped already.
    void info(uid_t uid, const std::string& line) {
        uint64_t overdue = 0;
        bool log = false;
        {
            std::lock_guard lock(mutex_);
            if (budgets_.size() > kMaxUids) budgets_.clear();  // budgets are a minute long: little is lost
            log = budgets_.try_emplace(uid, kLinesPerMinute).first->second.take(overdue);
        }
        if (overdue > 0)
            spdlog::info("{} more line(s) for uid {} within a minute, not logged one by one", overdue, uid);
        if (log) spdlog::info("{}", line);
    }

private:
    static constexpr size_t kMaxUids = 4096;
    std::mutex mutex_;  // leaf
    std::map<uid_t, base::LogBudget> budgets_;
};

}  // namespace eventd::server
