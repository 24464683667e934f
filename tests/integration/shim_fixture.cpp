#include "shim_fixture.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <catch2/catch.hpp>

extern char** environ;

namespace kmes::it {
namespace {

using Clock = std::chrono::steady_clock;

std::string shimd_path() {
    const char* path = std::getenv("KMES_SHIMD");
    if (!path || !*path) throw std::runtime_error("KMES_SHIMD is not set: run the tests through `meson test`");
    return path;
}

// A datagram socket bound at `path`: the NOTIFY_SOCKET end sd_notify() sends to.
int bind_notify_socket(const std::string& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path) throw std::runtime_error("notify socket path too long: " + path);
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
        throw std::runtime_error("cannot bind notify socket " + path + ": " + std::strerror(errno));
    return fd;
}

void write_file(const std::string& path, const std::string& text) {
    // Write in place (truncate + write + close): the shim's inotify watch sees IN_CLOSE_WRITE.
    std::ofstream out(path, std::ios::trunc);
    out << text;
    out.close();
    if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace

TempDir::TempDir() {
    char pattern[] = "/tmp/kmes-it-XXXXXX";
    if (!mkdtemp(pattern)) throw std::runtime_error(std::string("mkdtemp: ") + std::strerror(errno));
    path_ = pattern;
    chmod(path_.c_str(), 0755);  // other users (the probe as nobody) must reach the socket
}

TempDir::~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
}

std::string describe_status(int status) {
    if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) {
        const char* name = sigabbrev_np(WTERMSIG(status));
        return std::string("signal SIG") + (name ? name : std::to_string(WTERMSIG(status)).c_str());
    }
    return "status " + std::to_string(status);
}

ShimProcess::ShimProcess(ShimOptions options) {
    socket_path_ = options.socket_path.value_or(dir_ / "kmes.sock");
    std::filesystem::create_directories(dir_ / "etc");
    config_path_ = dir_ / "etc/kmes.json";
    config_file_ = config_path_;
    if (options.config_via_symlink) {
        std::filesystem::create_directories(dir_ / "real");
        config_file_ = dir_ / "real/kmes.json";
        std::filesystem::create_symlink(config_file_, config_path_);
    }
    if (options.raw_config) write_raw_config(*options.raw_config);
    else write_config(options.config);
    log_path_ = dir_ / "shim.log";
    const std::string notify_path = dir_ / "notify.sock";
    notify_fd_ = bind_notify_socket(notify_path);

    std::vector<std::string> args{shimd_path(), "--config", config_path_, "--socket", socket_path_};
    if (options.cpus) args.insert(args.end(), {"--cpus", std::to_string(options.cpus)});
    args.insert(args.end(), options.extra_args.begin(), options.extra_args.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);

    std::vector<std::string> env_storage{"NOTIFY_SOCKET=" + notify_path};
    for (char** e = environ; *e; ++e)
        if (std::strncmp(*e, "NOTIFY_SOCKET=", 14) != 0) env_storage.emplace_back(*e);
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
    setenv("KMES_SOCKET", socket_path_.c_str(), 1);  // libkmes in this process talks to it
}

std::unique_ptr<ShimProcess> ShimProcess::start(ShimOptions options) {
    const bool wait_configured = options.wait_configured;
    auto shim = std::make_unique<ShimProcess>(std::move(options));
    std::string why;
    if (!shim->wait_ready(&why)) FAIL(why);
    if (wait_configured && !shim->wait_notification(" rings of ", std::chrono::seconds(10), &why)) FAIL(why);
    return shim;
}

ShimProcess::~ShimProcess() {
    if (running()) {
        const int status = terminate();
        INFO("kmes-shimd ended with " << describe_status(status) << "; log:\n" << log());
        CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    }
    if (notify_fd_ >= 0) close(notify_fd_);
}

bool ShimProcess::wait_notification(const std::string& text, std::chrono::milliseconds timeout, std::string* why) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
        for (const std::string& n : notifications_)
            if (n.find(text) != std::string::npos) return true;
        if (wait_exit(std::chrono::milliseconds(0))) {
            if (why) *why = "kmes-shimd exited (" + describe_status(*exit_status_) + ") before \"" + text + "\"; log:\n" + log();
            return false;
        }
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0) {
            if (why) *why = "no \"" + text + "\" from kmes-shimd within " + std::to_string(timeout.count()) + " ms; log:\n" + log();
            return false;
        }
        pollfd p{notify_fd_, POLLIN, 0};
        if (poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 50))) == 1) {
            char buffer[4096];
            const ssize_t n = recv(notify_fd_, buffer, sizeof buffer, 0);
            if (n > 0) notifications_.emplace_back(buffer, size_t(n));
        }
    }
}

std::optional<int> ShimProcess::wait_exit(std::chrono::milliseconds timeout) {
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

int ShimProcess::terminate() {
    if (exit_status_) return *exit_status_;
    ::kill(pid_, SIGTERM);
    if (auto status = wait_exit(std::chrono::seconds(10))) return *status;
    ::kill(pid_, SIGKILL);  // hung on shutdown: the caller's status check fails
    return wait_exit(std::chrono::seconds(10)).value_or(-1);
}

void ShimProcess::signal(int signo) const {
    if (!exit_status_) ::kill(pid_, signo);
}

std::string ShimProcess::log() const {
    std::ifstream in(log_path_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

void ShimProcess::write_config(const nlohmann::json& config) const { write_file(config_file_, config.dump(2)); }

void ShimProcess::write_raw_config(const std::string& text) const { write_file(config_file_, text); }

}  // namespace kmes::it
