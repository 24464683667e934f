// The text of `eventctl --help` / `eventctl help`: what the tool does, every clause of the EVENTS
// query language with an example, the formats, exit status, environment and examples.
// docs/EVENTCTL.md reproduces it; docs/query-language.md is the full reference.
#pragma once

// Where eventd listens when neither --socket nor $EVENTD_SOCKET says otherwise (the shipped
// QuerySocketPath). A macro so the help text can embed it.
#define EVENTCTL_DEFAULT_SOCKET "/run/eventd/query.sock"

namespace eventctl {

extern const char* const kHelpDescription;  // above the options
extern const char* const kHelpFooter;       // below the options

}  // namespace eventctl
