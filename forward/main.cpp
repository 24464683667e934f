// eventd-forward: publishes eventd's events to NATS JetStream, exactly once (issue 12 part 2;
// docs/FORWARD.md). A client of eventd's query socket like eventctl: a forwarder that is down or
// cut off from NATS never slows ingestion — eventd's store is the buffer.
#include <cstdio>
#include <string>

#include <spdlog/spdlog.h>

#include "base/cli.hpp"
#include "base/daemon_log.hpp"
#include "base/sync_point.hpp"
#include "base/interrupt.hpp"
#include "forward/config.hpp"
#include "forward/forwarder.hpp"
#include "forward/status.hpp"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

}  // namespace

int main(int argc, char** argv) {
    base::cli::App app{"eventd-forward — publish eventd's events to NATS JetStream, exactly once, resuming after any\n"
                 "outage from a persisted cursor (docs/FORWARD.md).",
                 "eventd-forward"};
    std::string config_path = EVENTD_FORWARD_DEFAULT_CONFIG;
    bool status = false, version = false;
    app.add_option("-c,--config", config_path, "the JSON configuration (default " EVENTD_FORWARD_DEFAULT_CONFIG ")")
        ->type_name("FILE");
    app.add_flag("--status", status,
                 "print the running forwarder's status (from StateDirectory/status.json) and exit:\n"
                 "cursor lag in records and seconds, published, acknowledged, duplicates, reconnects");
    app.add_flag("-V,--version", version, "print the version and exit");
    app.footer(
        "Configuration keys (JSON object): NatsUrl (required; a cluster's servers comma-separated),\n"
        "EventdSocketPath, Stream, SubjectPrefix, StateDirectory, Query, HostName, CredentialsFile,\n"
        "NKey + NKeySeedFile, TlsCaFile, TlsCertFile + TlsKeyFile, MaxRecordsPerMessage,\n"
        "MaxMessageBytes, MaxMessageDelayMs (records packed into one message; 1 record: the record\n"
        "itself is the body), MaxPendingAcks, AckTimeoutMs, DuplicateWindowSeconds, Replicas,\n"
        "MaxBackoffMs.\n"
        "Reference: docs/FORWARD.md (installed in share/doc/eventd).\n"
        "\n"
        "Exit status: 0 stopped by SIGTERM/SIGINT (or --status printed), 1 cannot run (configuration,\n"
        "StateDirectory), 2 usage error.");
    if (const auto parsed = app.parse(argc, argv); !parsed.go_on) {
        if (parsed.error.empty()) return parsed.exit_code;  // --help
        std::fprintf(stderr, "eventd-forward: %s\nRun 'eventd-forward --help' for the options.\n", parsed.error.c_str());
        return kExitUsage;
    }
    if (version) {
        std::printf("eventd-forward %s (eventd)\n", EVENTD_VERSION);
        return kExitOk;
    }
    // Its lines stay on stdout (the default logger); their form and journal priorities are the
    // other daemons' (base/daemon_log.hpp).
    spdlog::set_formatter(base::daemon_log_formatter());
    auto loaded = eventd::forward::load_forward_config(config_path);
    if (!loaded) {
        std::fprintf(stderr, "eventd-forward: %s\n", loaded.error().message.c_str());
        return kExitFailure;
    }
    if (status) {
        auto text = eventd::forward::status_text(loaded->config.state_directory, eventd::forward::wall_ns());
        if (!text) {
            std::fprintf(stderr, "eventd-forward: %s\n", text.error().message.c_str());
            return kExitFailure;
        }
        std::fputs(text->c_str(), stdout);
        return kExitOk;
    }
    for (const auto& w : loaded->warnings) spdlog::warn("{}: {}", config_path, w);
    base::sync::install_throw_from_environment();  // test-only builds: base/sync_point.hpp
    if (!base::install_interrupt_handlers()) {
        std::fprintf(stderr, "eventd-forward: cannot set up signal handling\n");
        return kExitFailure;
    }
    if (auto st = eventd::forward::run_forwarder(loaded->config); !st) {
        spdlog::error("{}", st.error().message);
        return kExitFailure;
    }
    return kExitOk;
}
