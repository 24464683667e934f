#include "support/eventd_fixture.hpp"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include <catch2/catch.hpp>

namespace eventd::it {
namespace {

kmes::it::DaemonCommand eventd_command(const std::string& dir, const std::string& config_path) {
    static std::atomic<int> instances{0};  // log and socket names stay unique across restarts on one directory
    const std::string n = std::to_string(++instances);
    return {
        .name = "eventd",
        .args = {kmes::it::path_from_env("EVENTD"), "--config", config_path},
        .log_path = dir + "/eventd-" + n + ".log",
        .notify_path = dir + "/eventd-notify-" + n + ".sock",
        // eventd must learn everything from its configuration, not from this test's environment.
        .withheld_env = {"KMES_SOCKET=", "WATCHDOG_"},
        .ready_timeout = std::chrono::seconds(30),
        .stop_timeout = std::chrono::seconds(60),
    };
}

}  // namespace

nlohmann::json eventd_config(const std::string& dir, const std::string& kmes_socket, const nlohmann::json& overrides) {
    nlohmann::json config = {
        {"EventStorePath", dir + "/events"},
        {"QuerySocketPath", dir + "/query.sock"},
        {"KmesSocketPath", kmes_socket},
    };
    for (auto it = overrides.begin(); it != overrides.end(); ++it) {
        if (it.value().is_null())
            config.erase(it.key());
        else
            config[it.key()] = it.value();
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

EventdProcess::EventdProcess(const std::string& dir, const std::string& config_path)
    : DaemonProcess(eventd_command(dir, config_path)) {}

namespace {
kmes::it::DaemonCommand with_watchdog(kmes::it::DaemonCommand command, std::chrono::microseconds watchdog) {
    command.extra_env.push_back("WATCHDOG_USEC=" + std::to_string(watchdog.count()));
    return command;
}
}  // namespace

EventdProcess::EventdProcess(const std::string& dir, const std::string& config_path, std::chrono::microseconds watchdog)
    : DaemonProcess(with_watchdog(eventd_command(dir, config_path), watchdog)) {}

std::unique_ptr<EventdProcess> EventdProcess::start(const std::string& dir, const std::string& config_path) {
    auto eventd = std::make_unique<EventdProcess>(dir, config_path);
    std::string why;
    if (!eventd->wait_ready(&why)) FAIL(why);
    return eventd;
}

}  // namespace eventd::it
