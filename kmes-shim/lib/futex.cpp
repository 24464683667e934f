#include "futex.hpp"

#include <climits>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace kmes::detail {
int futex_wait(const uint32_t* word, uint32_t expected, const struct timespec* timeout) {
    long rc = syscall(SYS_futex, word, FUTEX_WAIT, expected, timeout, nullptr, 0);
    return rc < 0 ? -1 : 0;
}
int futex_wake_all(const uint32_t* word) {
    return static_cast<int>(syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0));
}
}  // namespace kmes::detail
