// One real daemon process for a test, started the way systemd starts it: the fixture binds the
// NOTIFY_SOCKET datagram socket (the end sd_notify() sends to), passes its path in the
// environment, sends the daemon's stdout and stderr to a log file, and reads the notifications
// ("READY=1", "STATUS=…") back. Teardown sends SIGTERM and CHECKs a clean exit.
//
// The plumbing shared by kmes::it::ShimProcess (shim_fixture.hpp) and
// eventd::it::EventdProcess (eventd_fixture.hpp); each of them says what to run.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace kmes::it {

// What to run and how long to wait for it.
struct DaemonCommand {
    std::string name;               // "kmes-shimd", "eventd": how failure messages call it
    std::vector<std::string> args;  // args[0] is the binary
    std::string log_path;           // stdout + stderr, truncated at the start
    std::string notify_path;        // the NOTIFY_SOCKET this fixture binds (a stale file is replaced)
    // Prefixes of environment variables not passed on ("KMES_SOCKET=", "WATCHDOG_"); the
    // daemon's NOTIFY_SOCKET is always notify_path, never this process's own.
    std::vector<std::string> withheld_env;
    std::vector<std::string> extra_env;  // "NAME=value" added after the withholding (WATCHDOG_USEC)
    std::chrono::milliseconds ready_timeout;  // wait_ready()
    std::chrono::milliseconds stop_timeout;   // terminate(): SIGKILL after this
};

// Starts argv[0] (a path) with envp, stdout and stderr into `output_path` (truncated). The child is tied to the calling thread's life: PR_SET_PDEATHSIG sends it
// SIGTERM when that thread ends — so a test killed by a sanitizer report, an abort or meson's
// timeout leaves no daemon running behind it (a daemon's SIGTERM path is its clean stop: the
// shim gives back the audit daemon role, eventd commits). Spawn from the test's main thread or
// from a thread that outlives the child. Throws on failure, with the reason.
pid_t spawn_tied_to_caller(char* const argv[], char* const envp[], const std::string& output_path);

class DaemonProcess {
public:
    // Binds the notify socket and spawns the daemon. Does not wait.
    explicit DaemonProcess(DaemonCommand command);
    // terminate() if still running, then CHECK a clean exit (status 0) with the log.
    ~DaemonProcess();
    DaemonProcess(const DaemonProcess&) = delete;
    DaemonProcess& operator=(const DaemonProcess&) = delete;

    // Wait for a notification containing `text`. False on timeout or when the daemon exited
    // first; *why says which, with the daemon's log.
    bool wait_notification(const std::string& text, std::chrono::milliseconds timeout, std::string* why);
    bool wait_ready(std::string* why) { return wait_notification("READY=1", command_.ready_timeout, why); }
    // Every notification received so far (reads what is pending first).
    const std::vector<std::string>& notifications();
    bool notified(const std::string& text);

    // The raw wait status once the process has exited within `timeout`.
    std::optional<int> wait_exit(std::chrono::milliseconds timeout);
    // SIGCONT (in case it is stopped), SIGTERM, and wait (SIGKILL after the command's
    // stop_timeout). Returns the wait status.
    int terminate();
    // SIGKILL and wait. Returns the wait status.
    int kill();
    // SIGSTOP / SIGCONT, returning once the kernel shows the process stopped / running.
    void freeze();
    void thaw();
    void signal(int signo) const;

    pid_t pid() const { return pid_; }
    bool running() const { return !exit_status_; }
    std::string log() const;  // stdout + stderr so far
    // Wait until the log contains `text`; false after `timeout` or when the daemon exited.
    bool wait_log(const std::string& text, std::chrono::milliseconds timeout);

private:
    void receive_pending();

    DaemonCommand command_;
    int notify_fd_ = -1;
    pid_t pid_ = -1;
    std::optional<int> exit_status_;
    std::vector<std::string> notifications_;  // every datagram received so far
};

// The path in environment variable `variable` (set by meson.build for the tests); throws when
// it is unset, as it is when the test binary is run by hand.
std::string path_from_env(const char* variable);

// The whole content of a text file ("" when it cannot be read).
std::string read_text(const std::string& path);

// The wait status as text ("exit 0", "signal SIGSEGV") for test messages.
std::string describe_status(int status);

// The state letter of /proc/<pid>/stat ('R', 'S', 'T', …), or '?' when the process is gone.
char process_state(pid_t pid);
// What a process holds, from /proc/<pid>: for "nothing leaks" checks after a hostile client
// or an overload (descriptors, threads and resident memory back to where they were).
struct ProcessUsage {
    size_t fds = 0;        // entries of /proc/<pid>/fd
    size_t threads = 0;    // "Threads:" of /proc/<pid>/status
    uint64_t rss_kib = 0;  // "VmRSS:"
    uint64_t cpu_ticks = 0;  // utime + stime of /proc/<pid>/stat (clock ticks): a busy loop shows here
};
ProcessUsage process_usage(pid_t pid);
// The descriptors of `pid` (the names in /proc/<pid>/fd) and the sockets among them
// ("socket:[inode]").
std::vector<int> open_fds(pid_t pid);
// Descriptors of `pid` numbered below `limit`: the process is out of descriptors when all `limit`
// numbers are taken.
size_t fds_below(pid_t pid, rlim_t limit);
std::set<std::string> open_sockets(pid_t pid);
// Connections that `pid` accepted on its Unix socket listening at `socket_path` and still holds
// open (/proc/net/unix: an accepted socket carries the listener's path). eventd closes a query
// connection only after joining its thread: at 0, no query thread is left either.
size_t accepted_connections(pid_t pid, const std::string& socket_path);
// "fd -> target" for every descriptor of `pid`, one per line (for failure messages).
std::string describe_fds(pid_t pid);

// SIGSTOP `pid` and wait until it is stopped; SIGCONT and wait until it is not.
void stop_process(pid_t pid);
void continue_process(pid_t pid);

}  // namespace kmes::it
