// The kernel's audit serials as a sequence (issue 40 item 7; docs/AUDIT.md "Loss"): gap
// detection applied to the kernel's own numbering. The kernel numbers an event when it makes
// its first record (audit_log_start → audit_get_stamp, after the backlog check), one global
// counter for every record of every source, so a serial that never arrives is an event the
// kernel numbered and the reader never received — lost after the kernel took it (the socket,
// the kernel's retry and hold queues, the shim's own queue), whichever the cause.
//
// Serials are taken on several CPUs and their records queued a little later, so they arrive
// slightly out of order: a missing serial is a hole only once it has stayed missing for
// `window` (measured on the reader's clock, at the records' arrival); a serial that arrives
// later fills its place. The tracker also measures the disorder it saw, to bound the window
// with numbers (max_lateness_serials, max_lateness).
//
// The kernel's counter is 32 bits and wraps; serials are tracked on a 64-bit line (each new
// serial placed nearest the highest so far) and holes are reported in the kernel's numbers,
// split where the counter wrapped. Not thread-safe: the audit source's mapping thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace kmes::audit {

class SerialTracker {
public:
    using Clock = std::chrono::steady_clock;
    using Range = std::pair<uint32_t, uint32_t>;  // first and last missing serial, the kernel's numbers

    explicit SerialTracker(Clock::duration window) : window_(window) {}

    // A record of `serial` arrived at `now` (every record of an event carries its serial).
    void saw(uint32_t serial, Clock::time_point now);
    // The holes that have stayed open for the window by `now`, oldest first; they are reported
    // once (a serial arriving after its hole was reported counts in late_after_report()).
    std::vector<Range> expired(Clock::time_point now);
    // Every hole still open (the source stops: nothing more will arrive).
    std::vector<Range> flush();

    // The measured disorder: how far below the highest serial seen, and how long after its
    // hole was noticed, a missing serial arrived at most.
    uint64_t max_lateness_serials() const { return max_lateness_serials_; }
    Clock::duration max_lateness() const { return max_lateness_; }
    // Serials that arrived after their hole was reported: a window too short (counted twice:
    // as lost and as stored). 0 unless the window is exceeded.
    uint64_t late_after_report() const { return late_after_report_; }

private:
    struct Hole {
        uint64_t last;
        Clock::time_point noticed;
    };
    std::vector<Range> take_holes(Clock::time_point now, bool all);
    uint64_t place(uint32_t serial) const;  // on the 64-bit line, nearest highest_

    const Clock::duration window_;
    std::optional<uint64_t> highest_;  // 64-bit line
    std::map<uint64_t, Hole> open_;    // first → hole, on the 64-bit line; noticed in this order
    // The latest holes reported (first → last), to tell a serial arriving after its report
    // from one more record of an event already seen.
    static constexpr size_t kReportedRemembered = 4096;
    std::map<uint64_t, uint64_t> reported_;
    uint64_t max_lateness_serials_ = 0;
    Clock::duration max_lateness_{};
    uint64_t late_after_report_ = 0;
};

}  // namespace kmes::audit
