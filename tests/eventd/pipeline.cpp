#include "pipeline.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>

#include <catch2/catch.hpp>

namespace eventd::it {

Pipeline::Pipeline(PipelineOptions options) : cpus_(options.cpus) {
    store_ = options.store_dir.empty() ? dir() + "/events" : options.store_dir;
    config_path_ = dir() + "/eventd.json";
    shim_options_ = {.config = options.kmes_config, .cpus = options.cpus, .socket_path = dir() + "/kmes.sock"};
    if (!options.generate.empty()) shim_options_.extra_args = {"--generate", options.generate};
    shim_ = kmes::it::ShimProcess::start(shim_options_);  // also points this process's libkmes at it
    boot_ = current_boot_id();
    watch_ = std::make_unique<RingWatch>(cpus_);
    write_eventd_config(options.eventd);
}

Pipeline::~Pipeline() {
    eventd_.reset();  // SIGTERM and a CHECKed clean exit, while the shim still runs
    watch_.reset();
    freeze_.reset();
}

void Pipeline::write_eventd_config(const nlohmann::json& overrides) {
    nlohmann::json o = overrides;
    if (!o.contains("EventStorePath")) o["EventStorePath"] = store_;
    write_json_file(config_path_, eventd_config(dir(), shim_->socket_path(), o));
}

EventdProcess& Pipeline::start_eventd() {
    REQUIRE(!eventd_running());
    eventd_ = EventdProcess::start(dir(), config_path_);
    return *eventd_;
}

std::string Pipeline::stop_eventd() {
    REQUIRE(eventd_);
    const int status = eventd_->terminate();
    const std::string log = eventd_->log();
    INFO("eventd ended with " << kmes::it::describe_status(status) << "; log:\n" << log);
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    return log;
}

EventdProcess& Pipeline::spawn_eventd() {
    REQUIRE(!eventd_running());
    eventd_ = std::make_unique<EventdProcess>(dir(), config_path_);
    return *eventd_;
}

void Pipeline::kill_eventd() {
    REQUIRE(eventd_);
    const int status = eventd_->kill();
    REQUIRE((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL));
}

Highest Pipeline::restart_shim() {
    REQUIRE_FALSE(freeze_);
    kmes::it::stop_process(shim_->pid());  // generators stop; the rings stay readable
    const Highest highest = watch_->highest();
    watch_.reset();
    const int status = shim_->kill();
    REQUIRE((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL));
    shim_.reset();
    shim_ = kmes::it::ShimProcess::start(shim_options_);
    boot_ = current_boot_id();
    watch_ = std::make_unique<RingWatch>(cpus_);
    return highest;
}

Highest Pipeline::stop_emission() {
    if (!freeze_) freeze_.emplace(shim_->pid());
    return watch_->highest();
}

Highest Pipeline::finish(std::chrono::milliseconds timeout) {
    const Highest highest = stop_emission();
    std::string status;
    const bool caught_up = wait_accounted(store_, boot_, highest, timeout, &status);
    // What eventd itself says it holds (rings' positions, shards' commits) when it fell behind.
    const std::string eventd_status = caught_up ? std::string() : eventctl_status();
    INFO("eventd did not account for every emitted sequence:\n"
         << status << "eventctl status:\n" << eventd_status << "eventd log:\n" << eventd_->log());
    REQUIRE(caught_up);
    stop_eventd();
    return highest;
}

std::string Pipeline::eventctl_status() const {
    const char* eventctl = std::getenv("EVENTCTL");
    if (eventctl == nullptr) return "(EVENTCTL is not set)\n";
    const std::string command =
        "timeout 10 '" + std::string(eventctl) + "' --socket '" + dir() + "/query.sock' status 2>&1";
    std::string out;
    if (FILE* p = popen(command.c_str(), "r")) {
        char buffer[4096];
        size_t n;
        while ((n = fread(buffer, 1, sizeof buffer, p)) > 0) out.append(buffer, n);
        pclose(p);
    }
    return out;
}

}  // namespace eventd::it
