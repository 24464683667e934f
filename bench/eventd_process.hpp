// A real eventd for a benchmark: its own temporary directory under a chosen parent (the store
// must live on a real disk, not tmpfs, or synchronous=FULL costs nothing), a generated
// eventd.json, output to <dir>/eventd.log, and readiness through a NOTIFY_SOCKET this class
// binds — the benchmark learns about READY=1 exactly as systemd would. stop() sends a signal
// and waits; the destructor kills a still-running eventd and removes the directory.
#pragma once

#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>
#include <poll.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

extern char** environ;

namespace bench {

struct EventdSettings {
    std::string binary;
    std::string kmes_socket;
    std::string parent_dir = "/var/tmp";  // where the temporary store goes
    uint32_t storage_shards = 0;
    uint32_t max_batch_size = 10000;
    uint32_t max_batch_latency_ms = 100;
    // An existing store to serve instead of a fresh <dir>/events (the query benchmark's
    // 10 M-event store). It lives outside the temporary directory, so it is never removed.
    std::string store_dir;
    uint32_t event_retention_days = 30;  // an old store must survive retention
    uint32_t query_timeout_ms = 30000;
    int ready_timeout_s = 20;  // a large store takes longer to open
};

// Memory of a process from /proc/<pid>/status, in KiB.
struct Rss {
    uint64_t total = 0;  // VmRSS
    uint64_t anon = 0;   // RssAnon: heap and stacks — where a leak would show
    uint64_t file = 0;   // RssFile: binary, libraries
    uint64_t shmem = 0;  // RssShmem: the ring mappings (each data page is mapped twice)
    uint64_t hwm = 0;    // VmHWM: peak VmRSS
};

inline Rss rss_of(pid_t pid) {
    Rss r;
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    std::string key;
    uint64_t value;
    std::string line;
    while (std::getline(status, line)) {
        std::istringstream in(line);
        if (!(in >> key >> value)) continue;
        if (key == "VmRSS:")
            r.total = value;
        else if (key == "RssAnon:")
            r.anon = value;
        else if (key == "RssFile:")
            r.file = value;
        else if (key == "RssShmem:")
            r.shmem = value;
        else if (key == "VmHWM:")
            r.hwm = value;
    }
    return r;
}

// CPU seconds (user + system, all threads) a process has used so far; 10 ms resolution.
inline double cpu_seconds_of(pid_t pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string content((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const size_t paren = content.rfind(')');
    if (paren == std::string::npos) return 0;
    std::istringstream fields(content.substr(paren + 2));  // from field 3 on
    std::string field;
    double ticks = 0;
    for (int index = 3; index <= 15 && fields >> field; ++index)
        if (index >= 14) ticks += std::stod(field);  // utime, stime
    return ticks / double(sysconf(_SC_CLK_TCK));
}

// The writer statistics eventd prints on SIGQUIT ("  shard N: rows R, batches B, …").
struct ShardDump {
    uint64_t rows = 0;
    uint64_t batches = 0;
    uint64_t failed_batches = 0;
};

class EventdProcess {
public:
    explicit EventdProcess(const EventdSettings& s) {
        std::string templ = s.parent_dir + "/eventd-bench-XXXXXX";
        if (!mkdtemp(templ.data())) throw std::runtime_error("mkdtemp in " + s.parent_dir + " failed");
        dir_ = templ;
        store_ = s.store_dir.empty() ? dir_ + "/events" : s.store_dir;
        ready_timeout_ = std::chrono::seconds(s.ready_timeout_s);
        log_ = dir_ + "/eventd.log";
        const std::string config = dir_ + "/eventd.json";
        std::ofstream(config) << "{\n  \"EventStorePath\": \"" << store_ << "\",\n  \"QuerySocketPath\": \"" << dir_
                              << "/query.sock\",\n  \"KmesSocketPath\": \"" << s.kmes_socket
                              << "\",\n  \"StorageShards\": " << s.storage_shards
                              << ",\n  \"MaxBatchSize\": " << s.max_batch_size
                              << ",\n  \"MaxBatchLatencyMs\": " << s.max_batch_latency_ms
                              << ",\n  \"EventRetentionDays\": " << s.event_retention_days
                              << ",\n  \"QueryTimeoutMs\": " << s.query_timeout_ms << "\n}\n";

        // sd_notify target: a datagram socket, as systemd's.
        const std::string notify_path = dir_ + "/notify.sock";
        notify_fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", notify_path.c_str());
        if (notify_fd_ < 0 || bind(notify_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
            throw std::runtime_error("cannot bind " + notify_path);

        std::vector<std::string> env_strings;
        for (char** e = environ; *e; ++e)
            if (std::strncmp(*e, "NOTIFY_SOCKET=", 14) != 0) env_strings.push_back(*e);
        env_strings.push_back("NOTIFY_SOCKET=" + notify_path);
        std::vector<char*> envp;
        for (std::string& e : env_strings) envp.push_back(e.data());
        envp.push_back(nullptr);
        std::vector<std::string> args{s.binary, "--config", config};
        std::vector<char*> argv;
        for (std::string& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);

        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_addopen(&actions, 1, log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        posix_spawn_file_actions_adddup2(&actions, 1, 2);
        const int rc = posix_spawn(&pid_, s.binary.c_str(), &actions, nullptr, argv.data(), envp.data());
        posix_spawn_file_actions_destroy(&actions);
        if (rc != 0) throw std::runtime_error("cannot start " + s.binary + ": " + std::strerror(rc));
        started_ = std::chrono::steady_clock::now();
        wait_ready();
    }

    ~EventdProcess() {
        if (pid_ > 0) {
            kill(pid_, SIGKILL);
            waitpid(pid_, nullptr, 0);
        }
        if (notify_fd_ >= 0) close(notify_fd_);
        std::error_code ec;
        if (!keep_) std::filesystem::remove_all(dir_, ec);
    }
    EventdProcess(const EventdProcess&) = delete;
    EventdProcess& operator=(const EventdProcess&) = delete;

    pid_t pid() const { return pid_; }
    const std::string& store() const { return store_; }
    std::string query_socket() const { return dir_ + "/query.sock"; }
    const std::string& log_path() const { return log_; }
    // Seconds from spawn to READY=1.
    double startup_seconds() const { return startup_seconds_; }
    void keep_directory() { keep_ = true; }

    // Send `sig` and wait for the exit; returns the exit status (-1 if it died of a signal).
    int stop(int sig = SIGTERM) {
        if (pid_ <= 0) return -1;
        kill(pid_, sig);
        int status = 0;
        waitpid(pid_, &status, 0);
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }

    // After stop(SIGQUIT): the per-shard writer statistics of the diagnostic dump.
    std::map<uint32_t, ShardDump> shard_dump() const {
        std::map<uint32_t, ShardDump> out;
        std::ifstream in(log_);
        std::string line;
        while (std::getline(in, line)) {
            const size_t at = line.find("  shard ");
            if (at == std::string::npos) continue;
            unsigned shard = 0;
            unsigned long long rows = 0, batches = 0, failed = 0;
            if (std::sscanf(line.c_str() + at, "  shard %u: rows %llu, batches %llu, failed batches %llu", &shard,
                            &rows, &batches, &failed) == 4)
                out[shard] = ShardDump{rows, batches, failed};
        }
        return out;
    }

private:
    void wait_ready() {
        const auto deadline = started_ + ready_timeout_;
        char buf[4096];
        for (;;) {
            pollfd p{notify_fd_, POLLIN, 0};
            poll(&p, 1, 50);
            if (p.revents & POLLIN) {
                const ssize_t n = recv(notify_fd_, buf, sizeof buf - 1, 0);
                if (n > 0) {
                    buf[n] = 0;
                    if (std::strstr(buf, "READY=1")) break;
                }
            }
            if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
                pid_ = -1;
                keep_ = true;
                throw std::runtime_error("eventd exited before READY=1; see " + log_);
            }
            if (std::chrono::steady_clock::now() > deadline) {
                keep_ = true;
                throw std::runtime_error("eventd did not send READY=1 within " +
                                         std::to_string(ready_timeout_.count()) + " s; see " + log_);
            }
        }
        startup_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    }

    std::string dir_, store_, log_;
    int notify_fd_ = -1;
    pid_t pid_ = -1;
    bool keep_ = false;
    std::chrono::steady_clock::time_point started_;
    std::chrono::seconds ready_timeout_{20};
    double startup_seconds_ = 0;
};

}  // namespace bench
