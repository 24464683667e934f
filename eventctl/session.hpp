// One query, start to finish (issue 4, eventctl; PSD-008 §8.8):
//   connect → send {query} → `ok` frames: records into the spool → `end`: spool to stdout, exit 0
//                                                             → `error`: spool dropped, message, exit 1
//                                          → `watch`: spool to stdout, then every live record is
//                                            written and flushed as its frame arrives, until
//                                            Ctrl-C (clean end) or eventd ends the stream.
// Nothing reaches stdout before `end`/`watch`, so a failing query prints only its error.
//
// Resuming (--cursor-file): the request carries `after` (the saved cursor, "" on the first run)
// and every frame's records are written and flushed as the frame arrives, then its cursor is
// saved (cursor_file.hpp) — the catch-up may be long, and what was shown and saved stays
// shown and saved if it fails part-way. A `gap` frame is reported on stderr.
#pragma once

#include <optional>
#include <string>

#include "base/result.hpp"
#include "record_writer.hpp"

namespace eventctl {

struct SessionOptions {
    std::string socket_path;
    std::string query;
    Format format = Format::pretty;
    bool status_view = false;  // pretty means tables (eventctl status)
    PrettyOptions pretty;      // --utc/--local, --all-fields, --width
    // Resume after the cursor in this file and keep it there (see above).
    std::optional<std::string> cursor_file;
    bool allow_gap = false;  // go on past records deleted after the saved position (warned on stderr)
};

enum class SessionEnd {
    done,               // `end`, or a stream ended by Ctrl-C: exit 0
    interrupted_early,  // Ctrl-C before the result was complete: nothing printed
};

// An Error is a failed connection, an eventd `error` frame or a broken reply: exit 1, message on
// stderr (and nothing on stdout unless a stream had already started).
base::Result<SessionEnd> run_session(const SessionOptions& options);

// eventd's query socket: --socket when given, else $EVENTD_SOCKET, else the installed default.
std::string socket_path(const std::optional<std::string>& option);

}  // namespace eventctl
