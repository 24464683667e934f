#include "support/forward_process.hpp"

#include <fstream>

#include <catch2/catch.hpp>

#include "support/eventctl_runner.hpp"
#include "support/eventually.hpp"

namespace eventd::query_it {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

Forwarder::Forwarder(QueryEnv& env, const NatsService& nats, const json& extra) : env_(env) {
    json config = {{"NatsUrl", nats.url()},         {"EventdSocketPath", env.socket()},
                   {"StateDirectory", state_dir()}, {"HostName", kForwardTestHost},
                   {"AckTimeoutMs", 2000},          {"MaxBackoffMs", 500}};
    for (auto it = extra.begin(); it != extra.end(); ++it) config[it.key()] = it.value();
    std::ofstream(config_path()) << config.dump(2);
}

void Forwarder::start() {
    kmes::it::DaemonCommand c;
    c.name = "eventd-forward";
    c.args = {kmes::it::path_from_env("EVENTD_FORWARD"), "--config", config_path()};
    c.log_path = env_.dir() + "/eventd-forward.log";
    c.notify_path = env_.dir() + "/forward.notify";
    c.ready_timeout = seconds(10);
    c.stop_timeout = seconds(10);
    process_ = std::make_unique<kmes::it::DaemonProcess>(c);
    std::string why;
    const bool ready = process_->wait_ready(&why);
    INFO(why);
    REQUIRE(ready);
}

void Forwarder::kill() {
    process_->kill();
    process_.reset();
}

void Forwarder::stop() { process_.reset(); }

std::string Forwarder::status() const {
    return run_command({kmes::it::path_from_env("EVENTD_FORWARD"), "--config", config_path(), "--status"}, seconds(10))
        .out;
}

std::string Forwarder::await_status(const std::vector<std::string>& texts, seconds timeout) const {
    std::string text;
    test_support::eventually(
        [&] {
            text = status();
            bool all = true;
            for (const auto& t : texts) all = all && text.find(t) != std::string::npos;
            return all;
        },
        timeout);
    return text;
}

}  // namespace eventd::query_it
