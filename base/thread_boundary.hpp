// No exception leaves a thread (STYLE.md "Errors are values"): an exception that escapes a
// std::thread's function calls std::terminate and takes the daemon — and every event in flight —
// down with it. Expected failures are Results; what can still throw is the unexpected
// (std::bad_alloc, a library's std::system_error). Every thread of every daemon runs its body
// through run_guarded at its boundary — eventd's (drain threads, shard writers, the retention
// thread, query workers, the query server's io thread), kmes-shimd's (the acceptor, one per
// connection, the audit source, the built-in generators) and eventd-forward's (the stall
// watch, the lag probe): the exception is logged with the thread's name and handed to the
// owner's on_failure, which fails cleanly — the daemon exits non-zero so systemd restarts it
// (drain, writer, acceptor, audit source, forwarder), or one piece of work ends with an error
// (a query, a shim connection, a retention pass).
#pragma once

#include <exception>
#include <string>
#include <string_view>
#include <utility>

#include <spdlog/spdlog.h>

namespace base {

// Run `body()`; if it throws, log and call `on_failure(description)`. Never throws.
template <class Body, class OnFailure>
void run_guarded(std::string_view thread_name, Body&& body, OnFailure&& on_failure) noexcept {
    std::string what;
    try {
        std::forward<Body>(body)();
        return;
    } catch (const std::exception& e) {
        what = e.what();
    } catch (...) {
        what = "an exception that is not a std::exception";
    }
    try {
        const std::string why = std::string(thread_name) + " stopped on an unexpected error: " + what;
        spdlog::critical("{}", why);
        std::forward<OnFailure>(on_failure)(why);
    } catch (...) {
        // Out of memory even for the message: the thread still ends without std::terminate.
    }
}

}  // namespace base
