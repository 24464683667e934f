// A real eventd for one test. The test owns a directory (usually a kmes::it::TempDir) that
// holds the configuration, the event store and the logs, so they outlive one eventd process:
// a test can kill eventd and start another on the same store. Readiness arrives through the
// real systemd protocol: each process gets its own NOTIFY_SOCKET datagram socket, bound by the
// fixture, and the fixture waits for "READY=1" (sd_notify in eventd's main).
//
// The binary is taken from $EVENTD (set by tests/eventd/meson.build).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace eventd::it {

// eventd.json for a test: EventStorePath <dir>/events, QuerySocketPath <dir>/query.sock,
// KmesSocketPath `kmes_socket`, then `overrides` on top (a null value removes the key).
nlohmann::json eventd_config(const std::string& dir, const std::string& kmes_socket,
                             const nlohmann::json& overrides = nlohmann::json::object());
// Write `config` to `path` atomically (temporary file + rename), so eventd's file watch never
// sees a half-written file.
void write_json_file(const std::string& path, const nlohmann::json& config);

class EventdProcess {
public:
    // Spawns `eventd --config <config_path>` with its log at <dir>/eventd-<n>.log. Does not wait.
    EventdProcess(const std::string& dir, const std::string& config_path);
    // Spawn and REQUIRE readiness.
    static std::unique_ptr<EventdProcess> start(const std::string& dir, const std::string& config_path);
    // SIGCONT + SIGTERM if still running, then CHECK a clean exit (status 0).
    ~EventdProcess();
    EventdProcess(const EventdProcess&) = delete;
    EventdProcess& operator=(const EventdProcess&) = delete;

    // Wait for a notification containing `text`. False on timeout or when eventd exited first;
    // *why says which, with eventd's log.
    bool wait_notification(const std::string& text, std::chrono::milliseconds timeout, std::string* why);
    bool wait_ready(std::string* why) { return wait_notification("READY=1", std::chrono::seconds(30), why); }
    // Every notification received so far (reads what is pending first).
    const std::vector<std::string>& notifications();
    bool notified(const std::string& text);

    // The raw wait status once the process has exited within `timeout`.
    std::optional<int> wait_exit(std::chrono::milliseconds timeout);
    // SIGCONT (in case it is stopped), SIGTERM, and wait (SIGKILL after 60 s). Returns the status.
    int terminate();
    // SIGKILL and wait. Returns the status.
    int kill();
    // SIGSTOP / SIGCONT, returning once the kernel shows the process stopped / running.
    void freeze();
    void thaw();
    void signal(int signo) const;

    pid_t pid() const { return pid_; }
    bool running() const { return !exit_status_; }
    std::string log() const;  // eventd's stdout+stderr so far
    // Wait until the log contains `text`; false after `timeout` or when eventd exited.
    bool wait_log(const std::string& text, std::chrono::milliseconds timeout);

private:
    void receive_pending();

    std::string log_path_;
    std::string notify_path_;
    int notify_fd_ = -1;
    pid_t pid_ = -1;
    std::optional<int> exit_status_;
    std::vector<std::string> notifications_;
};

// The state letter of /proc/<pid>/stat ('R', 'S', 'T', …), or '?' when the process is gone.
char process_state(pid_t pid);
// SIGSTOP `pid` and wait until it is stopped; SIGCONT and wait until it is not.
void stop_process(pid_t pid);
void continue_process(pid_t pid);

}  // namespace eventd::it
