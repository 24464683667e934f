// A real kmes-shimd for one test: its own temporary directory (test_support::TempDir: mode
// 0755, so a probe running as `nobody` can reach the socket), a kmes.json written by the test, the
// socket at <dir>/kmes.sock, and readiness through the real systemd protocol — the fixture
// owns the NOTIFY_SOCKET datagram socket and waits for "READY=1" (sd_notify in the shim).
// Teardown sends SIGTERM and checks the shim exits with status 0 (DaemonProcess).
//
// The binary is taken from $KMES_SHIMD (set by the meson.build of each suite that starts one).
// Constructing a ShimProcess also points this process's libkmes at it ($KMES_SOCKET).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/daemon_process.hpp"
#include "support/temp_dir.hpp"

namespace kmes::it {

struct ShimOptions {
    nlohmann::json config = nlohmann::json::object();  // written as <dir>/etc/kmes.json
    std::optional<std::string> raw_config;             // written verbatim instead (malformed files)
    uint32_t cpus = 0;                                 // --cpus when non-zero
    std::vector<std::string> extra_args;               // e.g. {"--generate", "rate=…"}
    std::optional<std::string> socket_path;            // default <dir>/kmes.sock
    // <dir>/etc/kmes.json is a symlink to <dir>/real/kmes.json: a test can then change the
    // configuration without the shim's inotify watch (on <dir>/etc) seeing it.
    bool config_via_symlink = false;
    // start(): also wait for the "STATUS=… rings of …" notification the shim sends after it
    // applied the configuration file (after ConfigDelayMs). Off to observe the boot rings.
    bool wait_configured = true;
};

// The shim's directory and configuration file. A base of ShimProcess listed before
// DaemonProcess, so the directory exists before the shim is spawned and is removed only after
// the shim has been stopped (bases are built in order and destroyed in reverse).
class ShimFiles {
protected:
    explicit ShimFiles(const ShimOptions& options);

    test_support::TempDir dir_;
    std::string socket_path_;
    std::string config_path_;
    std::string config_file_;
};

// A kmes-shimd: the process plumbing (notifications, exit, signals, log) is DaemonProcess.
// wait_ready() waits 10 s; terminate() sends SIGKILL after 10 s.
class ShimProcess : private ShimFiles, public DaemonProcess {
public:
    // Spawns the shim (does not wait). Use start() unless the test expects a failure.
    explicit ShimProcess(ShimOptions options = {});
    // Spawn, then REQUIRE readiness (and the configured status unless disabled).
    static std::unique_ptr<ShimProcess> start(ShimOptions options = {});

    const std::string& dir() const { return dir_.str(); }
    const std::string& socket_path() const { return socket_path_; }
    const std::string& config_path() const { return config_path_; }

    // Rewrite the configuration in place (through the symlink when config_via_symlink).
    void write_config(const nlohmann::json& config) const;
    void write_raw_config(const std::string& text) const;
    // The file the configuration content lives in (the symlink target when config_via_symlink).
    const std::string& config_file() const { return config_file_; }
};

}  // namespace kmes::it
