// eventd-forward's status (docs/FORWARD.md "Status"): the daemon rewrites
// StateDirectory/status.json every second (atomically); `eventd-forward --status` reads and
// prints it, so the status needs no socket of its own and can be read by anyone who may read
// the state directory.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "base/result.hpp"

namespace eventd::forward {

struct ForwardStatus {
    std::string state = "starting";  // connecting, forwarding, backing off, stopped
    std::string last_error;          // why the last session ended ("" none)
    int64_t last_error_ns = 0;       // wall clock of last_error
    bool caught_up = false;          // the stream's catch-up is over: records are live
    uint64_t published = 0;          // every session's, since start
    uint64_t acked = 0;
    uint64_t duplicates = 0;  // acks saying JetStream already held the message (replays)
    uint64_t pending = 0;     // published, not yet acknowledged
    int64_t backlog = -1;     // matching records eventd stores after the saved cursor (-1: not known)
    int64_t backlog_ns = 0;   // wall clock of that count
    uint64_t reconnects = 0;  // sessions started after the first
    uint64_t gaps = 0;        // synthetic.forward_gap records published
    int64_t last_acked_timestamp_ns = 0;  // event time of the newest acknowledged record
    int64_t cursor_saved_ns = 0;          // wall clock of the last cursor persisted
    int64_t updated_ns = 0;               // wall clock of this status
    int pid = 0;
};

// Now, in ns since the epoch: the clock of every time in the status.
int64_t wall_ns();

nlohmann::json to_json(const ForwardStatus& status);

// Write status.json in `dir` atomically.
base::Status write_status(const std::string& dir, const ForwardStatus& status);

// The text `eventd-forward --status` prints for status.json in `dir` (an Error when it cannot
// be read: the forwarder never ran with this StateDirectory, or no permission).
base::Result<std::string> status_text(const std::string& dir, int64_t now_ns);

}  // namespace eventd::forward
