// One query, start to finish (issue 4, eventctl; PSD-008 §8.8):
//   connect → send {query} → `ok` frames: records into the spool → `end`: spool to stdout, exit 0
//                                                             → `error`: spool dropped, message, exit 1
//                                          → `watch`: spool to stdout, then every live record is
//                                            written and flushed as its frame arrives, until
//                                            Ctrl-C (clean end) or eventd ends the stream.
// Nothing reaches stdout before `end`/`watch`, so a failing query prints only its error.
#pragma once

#include <string>

#include "base/result.hpp"
#include "record_writer.hpp"

namespace eventctl {

struct SessionOptions {
    std::string socket_path;
    std::string query;
    Format format = Format::pretty;
    bool status_view = false;  // pretty means tables (eventctl status)
};

enum class SessionEnd {
    done,               // `end`, or a stream ended by Ctrl-C: exit 0
    interrupted_early,  // Ctrl-C before the result was complete: nothing printed
};

// An Error is a failed connection, an eventd `error` frame or a broken reply: exit 1, message on
// stderr (and nothing on stdout unless a stream had already started).
kmes::Result<SessionEnd> run_session(const SessionOptions& options);

}  // namespace eventctl
