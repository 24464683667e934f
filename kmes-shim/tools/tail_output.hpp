// kmes-tail's stdout: whole lines only (one lock around each), the --count limit, and the
// choice between the human and the JSON form (formats drawn in event_format.hpp).
#pragma once

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

#include "event_format.hpp"

namespace kmes::tools {

class TailOutput {
public:
    // limit 0 = unlimited. flush_each: flush after every line, so `kmes-tail --follow | grep`
    // sees events as they happen.
    TailOutput(bool json, bool flush_each, uint64_t limit) : json_(json), flush_each_(flush_each), limit_(limit) {}

    // Print one event unless the limit was already reached; false once it has been.
    bool event(const EventView& event);
    // Print a loss line; gaps do not count towards the limit.
    void gap(const Gap& gap);
    // A line that is neither an event nor a gap (the --info table).
    void line(const std::string& text);
    // The --count limit has been reached.
    bool done() const;

private:
    void write_locked(const std::string& text);

    const bool json_;
    const bool flush_each_;
    const uint64_t limit_;
    mutable std::mutex mutex_;
    uint64_t printed_ = 0;
};

}  // namespace kmes::tools
