#include "support/daemon_process.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include <catch2/catch.hpp>

#include "support/eventually.hpp"

extern char** environ;

namespace kmes::it {
namespace {

using Clock = std::chrono::steady_clock;

// A datagram socket bound at `path`: the NOTIFY_SOCKET end sd_notify() sends to.
int bind_notify_socket(const std::string& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path) throw std::runtime_error("notify socket path too long: " + path);
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    unlink(path.c_str());
    const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
        throw std::runtime_error("cannot bind notify socket " + path + ": " + std::strerror(errno));
    return fd;
}

bool starts_with_any(const char* text, const std::vector<std::string>& prefixes) {
    for (const std::string& prefix : prefixes)
        if (std::strncmp(text, prefix.c_str(), prefix.size()) == 0) return true;
    return false;
}

}  // namespace

pid_t spawn_tied_to_caller(char* const argv[], char* const envp[], const std::string& output_path) {
    // Everything the child needs is prepared before fork(): between fork() and execve() in a
    // multi-threaded process only async-signal-safe calls are allowed (prctl, open, dup2, ...).
    const pid_t parent = getpid();
    int error_pipe[2];
    if (pipe2(error_pipe, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
    const pid_t pid = fork();
    if (pid < 0) {
        const int error = errno;
        close(error_pipe[0]);
        close(error_pipe[1]);
        throw std::runtime_error(std::string("fork: ") + std::strerror(error));
    }
    if (pid == 0) {
        close(error_pipe[0]);
        int step_error = 0;
        if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0) step_error = errno;
        // The parent may have died between fork() and prctl(): then nobody would signal us.
        if (step_error == 0 && getppid() != parent) _exit(127);
        const int out = step_error ? -1 : open(output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (step_error == 0 && out < 0) step_error = errno;
        if (step_error == 0 && (dup2(out, STDOUT_FILENO) < 0 || dup2(out, STDERR_FILENO) < 0)) step_error = errno;
        if (step_error == 0) {
            execve(argv[0], argv, envp);
            step_error = errno;
        }
        // The exec did not happen: tell the parent why through the close-on-exec pipe.
        (void)!write(error_pipe[1], &step_error, sizeof step_error);
        _exit(127);
    }
    close(error_pipe[1]);
    int child_error = 0;
    ssize_t n;
    do n = read(error_pipe[0], &child_error, sizeof child_error);
    while (n < 0 && errno == EINTR);
    close(error_pipe[0]);
    if (n == sizeof child_error) {
        waitpid(pid, nullptr, 0);
        throw std::runtime_error(std::string("cannot start ") + argv[0] + ": " + std::strerror(child_error));
    }
    return pid;  // n == 0: the pipe closed at the successful exec
}

DaemonProcess::DaemonProcess(DaemonCommand command) : command_(std::move(command)) {
    notify_fd_ = bind_notify_socket(command_.notify_path);

    std::vector<std::string> args = command_.args;
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);

    std::vector<std::string> env_storage{"NOTIFY_SOCKET=" + command_.notify_path};
    for (char** e = environ; *e; ++e)
        if (std::strncmp(*e, "NOTIFY_SOCKET=", 14) != 0 && !starts_with_any(*e, command_.withheld_env))
            env_storage.emplace_back(*e);
    for (const std::string& e : command_.extra_env) env_storage.push_back(e);
    std::vector<char*> envp;
    for (std::string& e : env_storage) envp.push_back(e.data());
    envp.push_back(nullptr);

    try {
        pid_ = spawn_tied_to_caller(argv.data(), envp.data(), command_.log_path);
    } catch (...) {
        close(notify_fd_);  // the destructor does not run for a constructor that throws
        unlink(command_.notify_path.c_str());
        throw;
    }
}

DaemonProcess::~DaemonProcess() {
    if (running()) {
        const int status = terminate();
        INFO(command_.name << " ended with " << describe_status(status) << "; log:\n" << log());
        CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    }
    close(notify_fd_);
    unlink(command_.notify_path.c_str());
}

void DaemonProcess::receive_pending() {
    for (;;) {
        char buffer[4096];
        const ssize_t n = recv(notify_fd_, buffer, sizeof buffer, MSG_DONTWAIT);
        if (n <= 0) return;
        notifications_.emplace_back(buffer, size_t(n));
    }
}

const std::vector<std::string>& DaemonProcess::notifications() {
    receive_pending();
    return notifications_;
}

bool DaemonProcess::notified(const std::string& text) {
    for (const std::string& n : notifications())
        if (n.find(text) != std::string::npos) return true;
    return false;
}

bool DaemonProcess::wait_notification(const std::string& text, std::chrono::milliseconds timeout, std::string* why) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
        if (notified(text)) return true;
        if (wait_exit(std::chrono::milliseconds(0))) {
            if (notified(text)) return true;  // it may have notified just before exiting
            if (why)
                *why = command_.name + " exited (" + describe_status(*exit_status_) + ") before \"" + text +
                       "\"; log:\n" + log();
            return false;
        }
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0) {
            if (why)
                *why = "no \"" + text + "\" from " + command_.name + " within " + std::to_string(timeout.count()) +
                       " ms; log:\n" + log();
            return false;
        }
        pollfd p{notify_fd_, POLLIN, 0};
        poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 50)));
    }
}

std::optional<int> DaemonProcess::wait_exit(std::chrono::milliseconds timeout) {
    test_support::eventually(
        [&] {
            if (exit_status_) return true;
            // A daemon's sd_notify blocks once its datagram queue (net.unix.max_dgram_qlen, 10
            // by default) is full, as systemd, which reads every one, never lets happen: read
            // them while it stops. eventd-forward, after a dozen NATS outages in the collector
            // test, hung in sd_notify("STOPPING=1") here until its SIGKILL (gdb showed it).
            receive_pending();
            int status = 0;
            const pid_t r = waitpid(pid_, &status, WNOHANG);
            if (r == pid_) exit_status_ = status;
            if (r < 0 && errno != EINTR) throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
            return exit_status_.has_value();
        },
        timeout, std::chrono::milliseconds(5));
    return exit_status_;
}

int DaemonProcess::terminate() {
    if (exit_status_) return *exit_status_;
    ::kill(pid_, SIGCONT);
    ::kill(pid_, SIGTERM);
    if (auto status = wait_exit(command_.stop_timeout)) return *status;
    // Hung on shutdown: where its threads wait goes into its log (which the caller's failed
    // status check prints), then SIGKILL.
    const std::string backtrace = "timeout 60 gdb -p " + std::to_string(pid_) +
                                  " -batch -ex 'thread apply all bt' >> '" + command_.log_path + "' 2>&1";
    if (std::system("command -v gdb > /dev/null") == 0 && std::system(backtrace.c_str()) != 0)
        std::fprintf(stderr, "gdb could not take the backtraces of %d\n", int(pid_));
    ::kill(pid_, SIGKILL);
    return wait_exit(std::chrono::seconds(10)).value_or(-1);
}

int DaemonProcess::kill() {
    if (exit_status_) return *exit_status_;
    ::kill(pid_, SIGKILL);
    return wait_exit(std::chrono::seconds(10)).value_or(-1);
}

void DaemonProcess::freeze() { stop_process(pid_); }
void DaemonProcess::thaw() { continue_process(pid_); }

void DaemonProcess::signal(int signo) const {
    if (!exit_status_) ::kill(pid_, signo);
}

std::string DaemonProcess::log() const {
    std::ifstream in(command_.log_path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

bool DaemonProcess::wait_log(const std::string& text, std::chrono::milliseconds timeout) {
    const auto logged = [&] { return log().find(text) != std::string::npos; };
    // Until it is logged, the process has exited (nothing more will come) or the time is up.
    test_support::eventually([&] { return logged() || wait_exit(std::chrono::milliseconds(0)).has_value(); }, timeout,
                             std::chrono::milliseconds(20));
    return logged();
}

std::string path_from_env(const char* variable) {
    const char* path = std::getenv(variable);
    if (!path || !*path)
        throw std::runtime_error(std::string(variable) + " is not set: run the tests through `meson test`");
    return path;
}

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

std::string describe_status(int status) {
    if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) {
        const char* name = sigabbrev_np(WTERMSIG(status));
        return std::string("signal SIG") + (name ? name : std::to_string(WTERMSIG(status)).c_str());
    }
    return "status " + std::to_string(status);
}

char process_state(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto close = text.rfind(')');  // the command name may hold spaces and parentheses
    if (close == std::string::npos || close + 2 >= text.size()) return '?';
    return text[close + 2];
}

ProcessUsage process_usage(pid_t pid) {
    ProcessUsage usage;
    usage.fds = open_fds(pid).size();
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(status, line);) {
        if (line.rfind("Threads:", 0) == 0) usage.threads = std::stoul(line.substr(8));
        if (line.rfind("VmRSS:", 0) == 0) usage.rss_kib = std::stoull(line.substr(6));
    }
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const auto close = text.rfind(')');
    if (close != std::string::npos) {
        std::istringstream fields(text.substr(close + 2));
        std::string field;
        // state is field 3; utime and stime are fields 14 and 15 (proc(5)).
        for (int n = 3; n <= 15 && fields >> field; ++n)
            if (n == 14 || n == 15) usage.cpu_ticks += std::stoull(field);
    }
    return usage;
}

std::vector<int> open_fds(pid_t pid) {
    std::vector<int> fds;
    DIR* dir = opendir(("/proc/" + std::to_string(pid) + "/fd").c_str());
    if (!dir) return fds;
    while (const dirent* e = readdir(dir))
        if (e->d_name[0] != '.') fds.push_back(std::atoi(e->d_name));
    closedir(dir);
    return fds;
}

size_t fds_below(pid_t pid, rlim_t limit) {
    size_t n = 0;
    for (int fd : open_fds(pid)) n += rlim_t(fd) < limit;
    return n;
}

// An accepted connection is a socket that was not there before — counting is not enough:
// another socket (a readiness probe's connection, a closing client) may go away at the same
// moment.
std::set<std::string> open_sockets(pid_t pid) {
    std::set<std::string> sockets;
    for (int fd : open_fds(pid)) {
        char target[64] = {};
        const std::string link = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
        const ssize_t len = ::readlink(link.c_str(), target, sizeof target - 1);
        if (len > 0 && std::string_view(target, size_t(len)).starts_with("socket:")) sockets.insert(target);
    }
    return sockets;
}

size_t accepted_connections(pid_t pid, const std::string& socket_path) {
    // proc(5) /proc/net/unix: "Num RefCount Protocol Flags Type St Inode Path"; a connection
    // accepted on a listener carries its path, the listener has __SO_ACCEPTCON (0x10000) set.
    std::set<std::string> accepted;
    std::ifstream table("/proc/net/unix");
    std::string line;
    std::getline(table, line);  // the header
    while (std::getline(table, line)) {
        std::istringstream fields(line);
        std::string num, refcount, protocol, flags, type, state, inode, path;
        if (!(fields >> num >> refcount >> protocol >> flags >> type >> state >> inode >> path)) continue;
        if (path == socket_path && (std::stoul(flags, nullptr, 16) & 0x10000) == 0)
            accepted.insert("socket:[" + inode + "]");
    }
    size_t n = 0;
    for (const std::string& s : open_sockets(pid)) n += accepted.count(s);
    return n;
}

std::string describe_fds(pid_t pid) {
    std::string text;
    for (int fd : open_fds(pid)) {
        char target[512] = {};
        const std::string link = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
        const ssize_t len = ::readlink(link.c_str(), target, sizeof target - 1);
        text += std::to_string(fd) + " -> " + (len > 0 ? std::string(target, size_t(len)) : "?") + "\n";
    }
    return text;
}

void stop_process(pid_t pid) {
    ::kill(pid, SIGSTOP);
    const auto stopped = [&] {
        const char state = process_state(pid);
        return state == 'T' || state == 't';
    };
    if (!test_support::eventually(stopped, std::chrono::seconds(10), std::chrono::milliseconds(1)))
        FAIL("process " << pid << " did not stop on SIGSTOP");
}

void continue_process(pid_t pid) {
    ::kill(pid, SIGCONT);
    test_support::eventually([&] { return process_state(pid) != 'T'; }, std::chrono::seconds(10),
                             std::chrono::milliseconds(1));
}

}  // namespace kmes::it
