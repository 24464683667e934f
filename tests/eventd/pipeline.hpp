// The whole pipeline for one test: a real kmes-shimd (its built-in generators emitting on
// every ring), a real eventd on a store in the test's own directory, and a RingWatch to learn
// what was emitted. Teardown order: eventd (SIGTERM, clean exit CHECKed), then the shim is
// thawed if frozen and terminated. The shim listens on <dir>/kmes.sock, so a restarted shim
// (restart_shim) is found by the same eventd configuration.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "support/accounting.hpp"
#include "support/eventd_fixture.hpp"
#include "support/shim_fixture.hpp"
#include "support/temp_dir.hpp"

namespace eventd::it {

struct PipelineOptions {
    uint32_t cpus = 2;                                      // shim --cpus (rings; may exceed cores)
    std::string generate = "rate=2000,payload=64";          // shim --generate; empty: no generator
    nlohmann::json kmes_config = nlohmann::json::object();  // kmes.json
    nlohmann::json eventd = nlohmann::json::object();       // eventd.json overrides
    std::string store_dir;                                  // default <dir>/events
};

class Pipeline {
public:
    // Starts the shim (ready and configured) and attaches the RingWatch; eventd is not started.
    explicit Pipeline(PipelineOptions options);
    ~Pipeline();

    const std::string& dir() const { return dir_.str(); }
    // `eventctl status` of the running eventd (a failure's diagnosis), or why there is none.
    std::string eventctl_status() const;
    // What eventd's threads are doing (a failure's diagnosis): the process state, each thread's
    // state, kernel wait channel and kernel stack, and every thread's backtrace when gdb is
    // installed (optional: without it the rest is still given).
    std::string eventd_threads() const;
    const std::string& store() const { return store_; }
    const std::string& config_path() const { return config_path_; }
    const Guid& boot() const { return boot_; }
    uint32_t cpus() const { return cpus_; }
    kmes::it::ShimProcess& shim() { return *shim_; }
    RingWatch& watch() { return *watch_; }
    EventdProcess& eventd() { return *eventd_; }
    bool eventd_running() const { return eventd_ && eventd_->running(); }

    // Rewrite eventd.json: the default paths plus `overrides`.
    void write_eventd_config(const nlohmann::json& overrides);
    // Start eventd (REQUIRE readiness); the previous process must have exited.
    EventdProcess& start_eventd();
    // Spawn eventd without waiting for readiness.
    EventdProcess& spawn_eventd();
    // SIGTERM eventd, CHECK a clean exit; returns the log.
    std::string stop_eventd();
    // SIGKILL eventd.
    void kill_eventd();

    // SIGKILL the shim (a KMES "reboot", DESIGN.md §2) and start a new one with the same
    // options and socket: a new boot id, sequences from 1, a new RingWatch. The old shim is
    // frozen first, so the returned highest sequences of its rings are exact. eventd, if it
    // runs, is left alone (it sees the rings retired and exits by itself, docs/EVENTD.md §13).
    // No ring swap may be under way: the RingWatch could not re-attach to a frozen shim (let
    // a resize settle and call watch().highest() first; the same holds for stop_emission).
    Highest restart_shim();

    // Freeze the shim (its generators stop; the rings stay readable) and read the highest
    // sequence of every ring.
    Highest stop_emission();
    bool emission_stopped() const { return freeze_.has_value(); }
    // stop_emission(), wait until eventd accounted for every sequence (REQUIRE), then
    // stop_eventd(). Returns the highest sequences.
    Highest finish(std::chrono::milliseconds timeout = std::chrono::seconds(90));

private:
    test_support::TempDir dir_;
    kmes::it::ShimOptions shim_options_;
    std::string store_;
    std::string config_path_;
    uint32_t cpus_;
    std::unique_ptr<kmes::it::ShimProcess> shim_;
    Guid boot_{};
    std::optional<ProcessFreeze> freeze_;
    std::unique_ptr<RingWatch> watch_;
    std::unique_ptr<EventdProcess> eventd_;
};

}  // namespace eventd::it
