// recv(2) that waits at most a deadline (issue 40): a connection that sends nothing, or the
// first packet of a request and never the rest, must not hold its thread and slot for ever.
#pragma once

#include <sys/types.h>

#include <cstddef>

namespace kmes::shim {

// As recv(fd, buffer, length, flags), after waiting up to `timeout_ms` for something to read
// (poll: a shutdown() or a closed peer also ends the wait). -1 with errno ETIMEDOUT when
// nothing came in time.
ssize_t recv_within(int fd, void* buffer, size_t length, int flags, int timeout_ms);

}  // namespace kmes::shim
