// Running eventctl (the real binary, $EVENTCTL) as a child process — as root or as another user
// through `setpriv --reuid --regid --init-groups` — and capturing stdout, stderr and the exit
// code; or keeping it running (a STREAM) and reading its output line by line as it arrives.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace eventd::query_it {

struct RunResult {
    int exit_code = -1;  // -1: killed after the timeout (or by a signal)
    std::string out;
    std::string err;
    bool timed_out = false;
    int term_signal = 0;  // the signal that ended it, when one did
};

// A local user to run as; nullopt = this process (root).
struct RunAs {
    std::string user;  // name (setpriv --init-groups needs it to find the supplementary groups)
    uid_t uid = 0;
    gid_t gid = 0;
};
std::optional<RunAs> lookup_user(const std::string& name);  // nullopt: no such user

// $EVENTCTL
std::string eventctl_path();

// `argv` with setpriv in front when `as` is set.
std::vector<std::string> command_as(const std::optional<RunAs>& as, std::vector<std::string> argv);

// Run to completion (SIGKILL after `timeout`).
RunResult run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                      const std::string& stdin_text = {});

// `eventctl seal --setup --store STORE` with test-sized keys (2-second epochs, 0.001 years of
// them, so setup takes moments): the verification key it printed last, or `error` saying what
// went wrong (with its output). Callers REQUIRE an empty error.
struct SealSetup {
    std::string key;  // 64 hex digits
    RunResult run;
    std::string error;
};
SealSetup setup_sealing_keys(const std::string& store);

// A running child with its stdout and stderr on pipes.
class Child {
public:
    explicit Child(const std::vector<std::string>& argv);
    ~Child();  // SIGKILL if still running
    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;

    // The next complete stdout line (without '\n'), or nullopt when none arrived in `timeout`
    // or stdout closed.
    std::optional<std::string> read_line(std::chrono::milliseconds timeout);
    // Everything still to come on stdout and stderr until exit (SIGKILL after `timeout`).
    RunResult finish(std::chrono::milliseconds timeout);
    void signal(int signo) const;
    pid_t pid() const { return pid_; }
    const std::string& err_so_far();

private:
    void pump(int timeout_ms);

    pid_t pid_ = -1;
    int out_fd_ = -1;
    int err_fd_ = -1;
    std::string out_;
    std::string err_;
    bool out_closed_ = false;
    bool err_closed_ = false;
};

}  // namespace eventd::query_it
