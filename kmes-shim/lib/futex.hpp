// Thin wrappers over futex(2) on a ring's futex_counter (PSD-003 §4.1.4 notification).
// Shared (not FUTEX_PRIVATE) because producer and consumers are different processes.
#pragma once

#include <cstdint>
#include <ctime>

namespace kmes::detail {

// Sleep while *word == expected, at most `timeout` (nullptr: forever).
// Returns 0 when woken or the value differed, -1 with errno (ETIMEDOUT, EINTR, EAGAIN).
int futex_wait(const uint32_t* word, uint32_t expected, const struct timespec* timeout);
// Wake every waiter on word. Returns the number woken or -1.
int futex_wake_all(const uint32_t* word);

}  // namespace kmes::detail
