#include "base/interrupt.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

namespace base {
namespace {

// A signal handler can reach nothing else, hence file scope.
std::atomic<bool> g_interrupted{false};
int g_pipe[2] = {-1, -1};

void on_signal(int) {
    const int saved = errno;
    g_interrupted.store(true, std::memory_order_relaxed);
    const char byte = 1;
    [[maybe_unused]] const auto n = write(g_pipe[1], &byte, 1);  // non-blocking; one byte is enough
    errno = saved;
}

}  // namespace

bool install_interrupt_handlers() {
    if (pipe2(g_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return false;
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    return true;
}

bool interrupted() { return g_interrupted.load(std::memory_order_relaxed); }

int interrupt_fd() { return g_pipe[0]; }

}  // namespace base
