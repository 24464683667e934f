// eventd-forward's work (issue 12 part 2; docs/FORWARD.md): follow eventd's query socket with a
// resumable stream and publish every record to JetStream, exactly once.
//
//   loop until SIGTERM/SIGINT:
//     session: connect NATS ─► stream checked/created ─► connect eventd ─► {query: Query STREAM,
//              after: <persisted cursor>, allow_gap: true}
//              ─► each record: subject + Nats-Msg-Id (record_id.hpp) ─► async publish
//              ─► each frame's cursor: a checkpoint in the AckWindow
//              ─► a gap frame: a synthetic.forward_gap record published in its place
//              persister thread: the newest fully acknowledged checkpoint → StateDirectory/cursor
//              (fsync'd, atomic rename), and status.json every second
//     any failure (eventd or NATS gone, a refused publish, no ack within AckTimeoutMs): the
//     session ends; back off (exponential, with jitter, up to MaxBackoffMs) and start again
//     from the persisted cursor. The store is the buffer: ingestion never waits for NATS.
#pragma once

#include <atomic>
#include <string>

#include "base/result.hpp"
#include "forward/config.hpp"

namespace eventd::forward {

inline constexpr const char* kCursorFileName = "cursor";
inline constexpr const char* kStatusFileName = "status.json";

// Runs until a signal (eventctl/interrupt.hpp handlers installed by the caller) asks it to
// stop. Errors: only what retrying cannot fix (the state directory unusable).
base::Status run_forwarder(const ForwardConfig& config);

}  // namespace eventd::forward
