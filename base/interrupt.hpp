// Ctrl-C and SIGTERM for the clients of eventd's query socket (eventctl, eventd-forward): they
// end a stream cleanly. The handler only sets a
// flag and writes one byte to a self-pipe, so a poll() on the socket wakes up at once and no
// signal can slip in between "check the flag" and "wait for data".
#pragma once

namespace base {

// Installs the handlers (no SA_RESTART: a write blocked on a full stdout pipe returns EINTR).
// Returns false if the self-pipe cannot be created.
bool install_interrupt_handlers();

bool interrupted();

// Readable once a signal arrived; -1 before install_interrupt_handlers().
int interrupt_fd();

}  // namespace base
