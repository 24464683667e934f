#include "eventd_fixture.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <catch2/catch.hpp>

#include "shim_fixture.hpp"  // describe_status

extern char** environ;

namespace eventd::it {
namespace {

using Clock = std::chrono::steady_clock;

std::string eventd_path() {
    const char* path = std::getenv("EVENTD");
    if (!path || !*path) throw std::runtime_error("EVENTD is not set: run the tests through `meson test`");
    return path;
}

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

std::atomic<int> instances{0};

}  // namespace

nlohmann::json eventd_config(const std::string& dir, const std::string& kmes_socket, const nlohmann::json& overrides) {
    nlohmann::json config = {
        {"EventStorePath", dir + "/events"},
        {"QuerySocketPath", dir + "/query.sock"},
        {"KmesSocketPath", kmes_socket},
    };
    for (auto it = overrides.begin(); it != overrides.end(); ++it) {
        if (it.value().is_null()) config.erase(it.key());
        else config[it.key()] = it.value();
    }
    return config;
}

void write_json_file(const std::string& path, const nlohmann::json& config) {
    const std::string temporary = path + ".tmp";
    {
        std::ofstream out(temporary, std::ios::trunc);
        out << config.dump(2) << '\n';
        if (!out) throw std::runtime_error("cannot write " + temporary);
    }
    if (rename(temporary.c_str(), path.c_str()) != 0)
        throw std::runtime_error("rename " + temporary + ": " + std::strerror(errno));
}

char process_state(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto close = text.rfind(')');  // the command name may hold spaces and parentheses
    if (close == std::string::npos || close + 2 >= text.size()) return '?';
    return text[close + 2];
}

void stop_process(pid_t pid) {
    ::kill(pid, SIGSTOP);
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (process_state(pid) != 'T' && process_state(pid) != 't' && Clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (process_state(pid) != 'T' && process_state(pid) != 't') FAIL("process " << pid << " did not stop on SIGSTOP");
}

void continue_process(pid_t pid) {
    ::kill(pid, SIGCONT);
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (process_state(pid) == 'T' && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

EventdProcess::EventdProcess(const std::string& dir, const std::string& config_path) {
    const int n = ++instances;
    log_path_ = dir + "/eventd-" + std::to_string(n) + ".log";
    notify_path_ = dir + "/eventd-notify-" + std::to_string(n) + ".sock";
    notify_fd_ = bind_notify_socket(notify_path_);

    std::vector<std::string> args{eventd_path(), "--config", config_path};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);

    // eventd must learn everything from its configuration, not from this test's environment.
    std::vector<std::string> env_storage{"NOTIFY_SOCKET=" + notify_path_};
    for (char** e = environ; *e; ++e)
        if (std::strncmp(*e, "NOTIFY_SOCKET=", 14) != 0 && std::strncmp(*e, "KMES_SOCKET=", 12) != 0 &&
            std::strncmp(*e, "WATCHDOG_", 9) != 0)
            env_storage.emplace_back(*e);
    std::vector<char*> envp;
    for (std::string& e : env_storage) envp.push_back(e.data());
    envp.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    const int rc = posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) throw std::runtime_error("cannot start " + args[0] + ": " + std::strerror(rc));
}

std::unique_ptr<EventdProcess> EventdProcess::start(const std::string& dir, const std::string& config_path) {
    auto eventd = std::make_unique<EventdProcess>(dir, config_path);
    std::string why;
    if (!eventd->wait_ready(&why)) FAIL(why);
    return eventd;
}

EventdProcess::~EventdProcess() {
    if (running()) {
        const int status = terminate();
        INFO("eventd ended with " << kmes::it::describe_status(status) << "; log:\n" << log());
        CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    }
    if (notify_fd_ >= 0) close(notify_fd_);
    unlink(notify_path_.c_str());
}

void EventdProcess::receive_pending() {
    for (;;) {
        char buffer[4096];
        const ssize_t n = recv(notify_fd_, buffer, sizeof buffer, MSG_DONTWAIT);
        if (n <= 0) return;
        notifications_.emplace_back(buffer, size_t(n));
    }
}

const std::vector<std::string>& EventdProcess::notifications() {
    receive_pending();
    return notifications_;
}

bool EventdProcess::notified(const std::string& text) {
    for (const std::string& n : notifications())
        if (n.find(text) != std::string::npos) return true;
    return false;
}

bool EventdProcess::wait_notification(const std::string& text, std::chrono::milliseconds timeout, std::string* why) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
        if (notified(text)) return true;
        if (wait_exit(std::chrono::milliseconds(0))) {
            receive_pending();  // it may have notified just before exiting
            if (notified(text)) return true;
            if (why)
                *why = "eventd exited (" + kmes::it::describe_status(*exit_status_) + ") before \"" + text + "\"; log:\n" + log();
            return false;
        }
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0) {
            if (why) *why = "no \"" + text + "\" from eventd within " + std::to_string(timeout.count()) + " ms; log:\n" + log();
            return false;
        }
        pollfd p{notify_fd_, POLLIN, 0};
        poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 50)));
    }
}

std::optional<int> EventdProcess::wait_exit(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (!exit_status_) {
        int status = 0;
        const pid_t r = waitpid(pid_, &status, WNOHANG);
        if (r == pid_) {
            exit_status_ = status;
            break;
        }
        if (r < 0 && errno != EINTR) throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
        if (Clock::now() >= deadline) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return exit_status_;
}

int EventdProcess::terminate() {
    if (exit_status_) return *exit_status_;
    ::kill(pid_, SIGCONT);
    ::kill(pid_, SIGTERM);
    if (auto status = wait_exit(std::chrono::seconds(60))) return *status;
    ::kill(pid_, SIGKILL);  // hung on shutdown: the caller's status check fails
    return wait_exit(std::chrono::seconds(10)).value_or(-1);
}

int EventdProcess::kill() {
    if (exit_status_) return *exit_status_;
    ::kill(pid_, SIGKILL);
    return wait_exit(std::chrono::seconds(10)).value_or(-1);
}

void EventdProcess::freeze() { stop_process(pid_); }
void EventdProcess::thaw() { continue_process(pid_); }

void EventdProcess::signal(int signo) const {
    if (!exit_status_) ::kill(pid_, signo);
}

std::string EventdProcess::log() const {
    std::ifstream in(log_path_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

bool EventdProcess::wait_log(const std::string& text, std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
        if (log().find(text) != std::string::npos) return true;
        if (wait_exit(std::chrono::milliseconds(0)) || Clock::now() >= deadline) return log().find(text) != std::string::npos;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

}  // namespace eventd::it
