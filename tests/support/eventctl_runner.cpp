#include "support/eventctl_runner.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace eventd::query_it {

using Clock = std::chrono::steady_clock;

std::optional<RunAs> lookup_user(const std::string& name) {
    const passwd* pw = getpwnam(name.c_str());
    if (!pw) return std::nullopt;
    return RunAs{name, pw->pw_uid, pw->pw_gid};
}

std::string eventctl_path() {
    const char* path = std::getenv("EVENTCTL");
    if (!path || !*path) throw std::runtime_error("EVENTCTL is not set: run the tests through `meson test`");
    return path;
}

std::vector<std::string> command_as(const std::optional<RunAs>& as, std::vector<std::string> argv) {
    if (!as) return argv;
    std::vector<std::string> full{"/usr/bin/setpriv", "--reuid=" + std::to_string(as->uid),
                                  "--regid=" + std::to_string(as->gid), "--init-groups", "--"};
    full.insert(full.end(), argv.begin(), argv.end());
    return full;
}

Child::Child(const std::vector<std::string>& argv) {
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
    std::vector<std::string> args = argv;
    std::vector<char*> cargv;
    for (std::string& a : args) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    const int rc = posix_spawn(&pid_, cargv[0], &actions, nullptr, cargv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    close(err[1]);
    out_fd_ = out[0];
    err_fd_ = err[0];
    if (rc != 0) throw std::runtime_error("cannot start " + args[0] + ": " + std::strerror(rc));
}

Child::~Child() {
    if (pid_ > 0) {
        ::kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
    }
    if (out_fd_ >= 0) close(out_fd_);
    if (err_fd_ >= 0) close(err_fd_);
}

void Child::pump(int timeout_ms) {
    pollfd p[2] = {{out_closed_ ? -1 : out_fd_, POLLIN, 0}, {err_closed_ ? -1 : err_fd_, POLLIN, 0}};
    if (poll(p, 2, timeout_ms) <= 0) return;
    char buffer[65536];
    for (int i = 0; i < 2; ++i) {
        if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        const ssize_t n = read(p[i].fd, buffer, sizeof buffer);
        if (n > 0)
            (i == 0 ? out_ : err_).append(buffer, size_t(n));
        else if (n == 0)
            (i == 0 ? out_closed_ : err_closed_) = true;
    }
}

std::optional<std::string> Child::read_line(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
        const auto nl = out_.find('\n');
        if (nl != std::string::npos) {
            std::string line = out_.substr(0, nl);
            out_.erase(0, nl + 1);
            return line;
        }
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0 || out_closed_) return std::nullopt;
        pump(int(std::min<int64_t>(left, 50)));
    }
}

const std::string& Child::err_so_far() {
    pump(0);
    return err_;
}

void Child::signal(int signo) const {
    if (pid_ > 0) ::kill(pid_, signo);
}

RunResult Child::finish(std::chrono::milliseconds timeout) {
    RunResult r;
    const auto deadline = Clock::now() + timeout;
    while (!(out_closed_ && err_closed_)) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0) {
            r.timed_out = true;
            ::kill(pid_, SIGKILL);
            break;
        }
        pump(int(std::min<int64_t>(left, 50)));
    }
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.term_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    r.out = std::move(out_);
    r.err = std::move(err_);
    return r;
}

RunResult run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                      const std::string& stdin_text) {
    if (stdin_text.empty()) {
        Child child(argv);
        return child.finish(timeout);
    }
    // stdin from a temporary file: simple and never blocks on a full pipe.
    char path[] = "/tmp/eventctl-stdin-XXXXXX";
    const int fd = mkstemp(path);
    if (fd < 0) throw std::runtime_error("mkstemp failed");
    if (write(fd, stdin_text.data(), stdin_text.size()) != ssize_t(stdin_text.size()))
        throw std::runtime_error("write failed");
    close(fd);
    chmod(path, 0644);
    std::vector<std::string> shell{"/bin/sh", "-c", "exec \"$@\" < \"$0\"", path};
    shell.insert(shell.end(), argv.begin(), argv.end());
    Child child(shell);
    RunResult r = child.finish(timeout);
    unlink(path);
    return r;
}

SealSetup setup_sealing_keys(const std::string& store) {
    SealSetup setup;
    std::error_code ec;
    std::filesystem::create_directories(store, ec);
    setup.run = run_command({eventctl_path(), "seal", "--setup", "--store", store, "--epoch-seconds", "2", "--years",
                             "0.001"},
                            std::chrono::seconds(60));
    std::string text = setup.run.out;
    while (!text.empty() && text.back() == '\n') text.pop_back();
    const std::string key = text.substr(text.rfind('\n') + 1);
    const std::string output = "\nstdout:\n" + setup.run.out + "stderr:\n" + setup.run.err;
    if (setup.run.exit_code != 0) {
        setup.error = "eventctl seal --setup: exit " + std::to_string(setup.run.exit_code) + output;
    } else if (key.size() != 64 || key.find_first_not_of("0123456789abcdef") != std::string::npos) {
        setup.error = "eventctl seal --setup: the last line is no verification key" + output;
    } else if (!std::filesystem::exists(store + "/sealing.key") || !std::filesystem::exists(store + "/sealing.certs")) {
        setup.error = "eventctl seal --setup: no sealing.key and sealing.certs in " + store + output;
    } else {
        setup.key = key;
    }
    return setup;
}

}  // namespace eventd::query_it
