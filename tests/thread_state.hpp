// Where a thread of this process is: /proc/self/task/<tid>/syscall names the system call a
// blocked thread is in ("running" when it is not blocked). A sync point tells a test that a
// thread is about to call futex_wait; this tells it the thread is in it, so that the test
// wakes a sleeper — not a thread still on its way to sleep — without guessing a delay.
#pragma once

#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>

#include "support/eventually.hpp"

namespace kmes::test {

// The calling thread's id, for another thread to watch.
inline pid_t current_tid() { return pid_t(::syscall(SYS_gettid)); }

// True once thread `tid` of this process is blocked in futex(2) (a futex wait, a condition
// variable, a contended mutex); false if it is not there within `limit`.
inline bool wait_until_in_futex(pid_t tid, std::chrono::milliseconds limit = std::chrono::seconds(10)) {
    const std::string path = "/proc/self/task/" + std::to_string(tid) + "/syscall";
    const std::string futex = std::to_string(SYS_futex);
    return test_support::eventually(
        [&] {
            std::ifstream in(path);
            std::string call;
            return in >> call && call == futex;
        },
        limit, std::chrono::milliseconds(1));
}

}  // namespace kmes::test
