// A real eventd for one test. The test owns a directory (usually a test_support::TempDir) that
// holds the configuration, the event store and the logs, so they outlive one eventd process:
// a test can kill eventd and start another on the same store. Readiness arrives through the
// real systemd protocol: each process gets its own NOTIFY_SOCKET datagram socket, bound by the
// fixture, and the fixture waits for "READY=1" (sd_notify in eventd's main).
//
// The binary is taken from $EVENTD (set by the meson.build of each suite that starts one).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "support/daemon_process.hpp"

namespace eventd::it {

// eventd.json for a test: EventStorePath <dir>/events, QuerySocketPath <dir>/query.sock,
// KmesSocketPath `kmes_socket`, then `overrides` on top (a null value removes the key).
nlohmann::json eventd_config(const std::string& dir, const std::string& kmes_socket,
                             const nlohmann::json& overrides = nlohmann::json::object());
// Write `config` to `path` atomically (temporary file + rename), so eventd's file watch never
// sees a half-written file.
void write_json_file(const std::string& path, const nlohmann::json& config);

// An eventd: the process plumbing (notifications, exit, signals, log) is kmes::it::DaemonProcess.
class EventdProcess : public kmes::it::DaemonProcess {
public:
    // Spawns `eventd --config <config_path>` with its log at <dir>/eventd-<n>.log. Does not wait.
    // wait_ready() waits 30 s; terminate() sends SIGKILL after 60 s. This test's NOTIFY_SOCKET,
    // KMES_SOCKET and WATCHDOG_* are not passed on: eventd learns everything from its configuration.
    EventdProcess(const std::string& dir, const std::string& config_path);
    // The same with systemd's watchdog on (WATCHDOG_USEC, as systemd sets it for WatchdogSec):
    // eventd sends WATCHDOG=1 on the test's NOTIFY_SOCKET (notified()).
    EventdProcess(const std::string& dir, const std::string& config_path, std::chrono::microseconds watchdog);
    // Spawn and REQUIRE readiness.
    static std::unique_ptr<EventdProcess> start(const std::string& dir, const std::string& config_path);
};

using kmes::it::continue_process;
using kmes::it::process_state;
using kmes::it::stop_process;

}  // namespace eventd::it
