// eventd-forward's status (docs/FORWARD.md "Status"): the daemon rewrites
// StateDirectory/status.json every second (atomically); `eventd-forward --status` reads and
// prints it, so the status needs no socket of its own and can be read by anyone who may read
// the state directory.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "base/result.hpp"
#include "protocol/status.hpp"

namespace eventd::forward {

// The schema's (protocol/status.hpp), written by the forwarder and read by --status.
using ForwardStatus = protocol::status::Forwarder;

// Now, in ns since the epoch: the clock of every time in the status.
int64_t wall_ns();

// Write status.json in `dir` atomically.
base::Status write_status(const std::string& dir, const ForwardStatus& status);

// The text `eventd-forward --status` prints for status.json in `dir` (an Error when it cannot
// be read: the forwarder never ran with this StateDirectory, or no permission).
base::Result<std::string> status_text(const std::string& dir, int64_t now_ns);

}  // namespace eventd::forward
