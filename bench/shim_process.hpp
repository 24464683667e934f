// A real kmes-shimd for a benchmark: temporary directory and socket, `--config /nonexistent`
// (defaults: 4 MiB rings, one per online CPU) unless a config file is given, output to
// <dir>/shimd.log, readiness when kmes_boot_id() answers on the socket, SIGTERM on
// destruction. Also points this process's libkmes at it ($KMES_SOCKET).
#pragma once

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <chrono>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "kmes/kmes.h"

extern char** environ;

namespace bench {

class ShimProcess {
public:
    explicit ShimProcess(const std::string& binary, std::vector<std::string> extra_args = {},
                         const std::string& config = "/nonexistent") {
        char templ[] = "/tmp/kmes-bench-XXXXXX";
        if (!mkdtemp(templ)) throw std::runtime_error("mkdtemp failed");
        dir_ = templ;
        socket_ = dir_ + "/kmes.sock";
        const std::string& socket = socket_;
        const std::string log = dir_ + "/shimd.log";
        std::vector<std::string> args{binary, "--config", config, "--socket", socket};
        args.insert(args.end(), extra_args.begin(), extra_args.end());
        std::vector<char*> argv;
        for (std::string& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);

        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        posix_spawn_file_actions_adddup2(&actions, 1, 2);
        const int rc = posix_spawn(&pid_, binary.c_str(), &actions, nullptr, argv.data(), environ);
        posix_spawn_file_actions_destroy(&actions);
        if (rc != 0) throw std::runtime_error("cannot start " + binary + ": " + std::strerror(rc));

        setenv("KMES_SOCKET", socket.c_str(), 1);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        uint8_t boot_id[16];
        while (kmes_boot_id(boot_id) != 0) {
            if (std::chrono::steady_clock::now() > deadline || waitpid(pid_, nullptr, WNOHANG) == pid_)
                throw std::runtime_error("kmes-shimd did not become ready; see " + log);
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    }
    ~ShimProcess() {
        kill(pid_, SIGTERM);
        waitpid(pid_, nullptr, 0);
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
    ShimProcess(const ShimProcess&) = delete;
    ShimProcess& operator=(const ShimProcess&) = delete;

    pid_t pid() const { return pid_; }
    const std::string& socket() const { return socket_; }

private:
    std::string dir_;
    std::string socket_;
    pid_t pid_ = -1;
};

}  // namespace bench
