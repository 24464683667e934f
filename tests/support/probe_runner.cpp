#include "support/probe_runner.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "support/shim_fixture.hpp"

extern char** environ;

namespace kmes::it {
namespace {

// posix_spawnp with stdout and stderr on a pipe; returns the read end.
pid_t spawn_captured(const std::vector<std::string>& prefix, const std::vector<std::string>& steps, int* out_fd) {
    std::vector<std::string> args = prefix;
    args.push_back(path_from_env("KMES_PROBE"));
    args.insert(args.end(), steps.begin(), steps.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);

    int pipe_fds[2];
    if (pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
    pid_t pid = -1;
    const int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(pipe_fds[1]);
    if (rc != 0) {
        close(pipe_fds[0]);
        throw std::runtime_error("cannot start " + args[0] + ": " + std::strerror(rc));
    }
    *out_fd = pipe_fds[0];
    return pid;
}

ProbeRun collect(pid_t pid, int out_fd) {
    std::string text;
    char buffer[4096];
    for (ssize_t n; (n = read(out_fd, buffer, sizeof buffer)) != 0;) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) break;
        text.append(buffer, size_t(n));
    }
    close(out_fd);
    ProbeRun run;
    while (waitpid(pid, &run.status, 0) < 0 && errno == EINTR) {}
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) run.lines.push_back(line);
    return run;
}

}  // namespace

std::vector<std::string> as_nobody(const std::vector<gid_t>& groups) { return as_user(kNobody, groups); }

std::vector<std::string> as_user(uid_t uid, const std::vector<gid_t>& groups) {
    std::vector<std::string> prefix{"setpriv", "--reuid=" + std::to_string(uid), "--regid=" + std::to_string(uid)};
    if (groups.empty()) {
        prefix.push_back("--clear-groups");
    } else {
        std::string list;
        for (gid_t g : groups) list += (list.empty() ? "" : ",") + std::to_string(g);
        prefix.push_back("--groups=" + list);
    }
    return prefix;
}

std::vector<std::string> on_cpu(unsigned cpu) { return {"taskset", "-c", std::to_string(cpu)}; }

bool ProbeRun::exited_cleanly() const { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

std::string ProbeRun::get(const std::string& step, const std::string& key, int nth) const {
    for (const std::string& line : lines) {
        if (line.rfind(step + " ", 0) != 0 || nth-- > 0) continue;
        std::istringstream fields(line.substr(step.size() + 1));
        for (std::string field; fields >> field;)
            if (field.rfind(key + "=", 0) == 0) return field.substr(key.size() + 1);
        return "";
    }
    return "";
}

bool ProbeRun::has_line(const std::string& text) const {
    for (const std::string& line : lines)
        if (line == text) return true;
    return false;
}

std::string ProbeRun::output() const {
    std::string text = "kmes-probe " + describe_status(status) + ", output:\n";
    for (const std::string& line : lines) text += "  " + line + "\n";
    return text;
}

ProbeRun run_probe(const std::vector<std::string>& prefix, const std::vector<std::string>& steps) {
    int out_fd = -1;
    const pid_t pid = spawn_captured(prefix, steps, &out_fd);
    return collect(pid, out_fd);
}

BackgroundProbe::BackgroundProbe(const std::vector<std::string>& prefix, const std::vector<std::string>& steps) {
    pid_ = spawn_captured(prefix, steps, &out_fd_);
}

BackgroundProbe::~BackgroundProbe() {
    if (pid_ > 0) (void)finish();
}

ProbeRun BackgroundProbe::terminate() {
    if (pid_ > 0) kill(pid_, SIGTERM);
    return finish();
}

ProbeRun BackgroundProbe::finish() {
    ProbeRun run = collect(pid_, out_fd_);
    pid_ = -1;
    out_fd_ = -1;
    return run;
}

}  // namespace kmes::it
