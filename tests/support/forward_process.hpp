// eventd-forward as systemd runs it, for the forwarder and collector tests (issue 12): its
// configuration written into the host environment's directory, READY=1 awaited, SIGKILL or
// SIGTERM (the fixture CHECKs exit 0), and its --status output.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/daemon_process.hpp"
#include "support/nats_fixture.hpp"
#include "support/query_env.hpp"

namespace eventd::query_it {

// The HostName the forwarder tests publish under: a space and dots, escaped in subjects.
inline constexpr const char* kForwardTestHost = "web 3.example";

class Forwarder {
public:
    // Forwards `env`'s eventd to `nats` (a server or a cluster: NatsUrl is its url()); `extra`
    // keys override the test defaults (HostName kForwardTestHost, AckTimeoutMs 2000,
    // MaxBackoffMs 500, state in <env>/forward-state).
    Forwarder(QueryEnv& env, const NatsService& nats, const nlohmann::json& extra = nlohmann::json::object());
    std::string state_dir() const { return env_.dir() + "/forward-state"; }
    std::string config_path() const { return env_.dir() + "/eventd-forward.json"; }

    void start();  // REQUIREs readiness
    void kill();   // SIGKILL
    void stop();   // SIGTERM; the fixture CHECKs exit 0
    bool running() const { return process_ != nullptr; }
    std::string log() const { return process_ ? process_->log() : ""; }
    std::string status() const;  // eventd-forward --status
    // status() once it contains every one of `texts`, or the last one after `timeout`.
    std::string await_status(const std::vector<std::string>& texts,
                             std::chrono::seconds timeout = std::chrono::seconds(10)) const;

private:
    QueryEnv& env_;
    std::unique_ptr<kmes::it::DaemonProcess> process_;
};

}  // namespace eventd::query_it
