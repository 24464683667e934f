#include "serial_tracker.hpp"

namespace kmes::audit {

uint64_t SerialTracker::place(uint32_t serial) const {
    if (!highest_) return serial;
    // The 32-bit distance from the highest, read as signed: ahead up to 2^31, behind otherwise.
    const auto delta = static_cast<int32_t>(serial - static_cast<uint32_t>(*highest_));
    const int64_t placed = static_cast<int64_t>(*highest_) + delta;
    return placed < 0 ? serial : static_cast<uint64_t>(placed);
}

void SerialTracker::saw(uint32_t serial, Clock::time_point now) {
    const uint64_t at = place(serial);
    if (!highest_) {
        highest_ = at;  // where this reader came in: what came before is not its to account
        return;
    }
    if (at > *highest_) {
        if (at > *highest_ + 1) open_.emplace(*highest_ + 1, Hole{at - 1, now});
        highest_ = at;
        return;
    }
    // At or below the highest: another record of an event seen already (the usual case), a
    // serial filling its hole late, or one whose hole was reported already.
    auto hole = open_.upper_bound(at);
    if (hole != open_.begin() && (--hole)->first <= at && at <= hole->second.last) {
        max_lateness_serials_ = std::max(max_lateness_serials_, *highest_ - at);
        max_lateness_ = std::max(max_lateness_, now - hole->second.noticed);
        const uint64_t first = hole->first;
        const Hole rest = hole->second;
        open_.erase(hole);
        if (first < at) open_.emplace(first, Hole{at - 1, rest.noticed});
        if (at < rest.last) open_.emplace(at + 1, Hole{rest.last, rest.noticed});
        return;
    }
    auto reported = reported_.upper_bound(at);
    if (reported != reported_.begin() && (--reported)->first <= at && at <= reported->second) {
        ++late_after_report_;
        // Counted once: the next record of the same event is then an event seen already.
        const auto [first, last] = *reported;
        reported_.erase(reported);
        if (first < at) reported_.emplace(first, at - 1);
        if (at < last) reported_.emplace(at + 1, last);
    }
}

std::vector<SerialTracker::Range> SerialTracker::take_holes(Clock::time_point now, bool all) {
    std::vector<Range> out;
    while (!open_.empty()) {
        const auto hole = open_.begin();
        if (!all && now - hole->second.noticed < window_) break;  // later ones were noticed later still
        const uint64_t first = hole->first, last = hole->second.last;
        open_.erase(hole);
        reported_.emplace(first, last);
        if (reported_.size() > kReportedRemembered) reported_.erase(reported_.begin());
        // In the kernel's numbers, split where its 32-bit counter wrapped.
        for (uint64_t from = first; from <= last;) {
            const uint64_t wrap_end = (from | 0xffffffffull);
            const uint64_t to = std::min(last, wrap_end);
            out.emplace_back(static_cast<uint32_t>(from), static_cast<uint32_t>(to));
            from = to + 1;
        }
    }
    return out;
}

std::vector<SerialTracker::Range> SerialTracker::expired(Clock::time_point now) { return take_holes(now, false); }

std::vector<SerialTracker::Range> SerialTracker::flush() { return take_holes(Clock::time_point::max(), true); }

}  // namespace kmes::audit
