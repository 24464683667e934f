// eventd: drains every KMES CPU ring into sharded SQLite with exact loss accounting.
// See docs/EVENTD.md.
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <chrono>
#include <cstdlib>

#include <spdlog/spdlog.h>

#include "base/daemon_log.hpp"
#include "daemon.hpp"
#include "store/store_privacy.hpp"
#include "base/cli.hpp"
#include "base/file_watch.hpp"
#include "base/sync_point.hpp"
#include "test_hooks.hpp"

int main(int argc, char** argv) {
    base::cli::App app{
        "eventd — drains every KMES per-CPU ring into sharded SQLite (WAL, synchronous=FULL),\n"
        "records every lost sequence range as a synthetic.gap, and resumes from the rings after a\n"
        "crash without storing anything twice, and answers queries (EVENTS, STREAM, STATUS) on its\n"
        "query socket. Signals: SIGTERM/SIGINT graceful shutdown, SIGQUIT the same plus a\n"
        "diagnostic dump, SIGHUP reload (the file is also watched). With CollectorSource in its\n"
        "configuration it is a fleet collector instead: it ingests what eventd-forward published to\n"
        "NATS JetStream from other hosts (docs/FORWARD.md)."};
    std::string config_path = "/etc/eventd/eventd.json";
    app.add_option("-c,--config", config_path, "configuration file (JSON); see docs/CONFIGURATION.md")
        ->capture_default_str();
    app.set_version_flag("-V,--version", "eventd " EVENTD_VERSION " (eventd)", "print the version and exit");
    if (const auto parsed = app.parse(argc, argv); !parsed.go_on) return parsed.error.empty() ? parsed.exit_code : app.print_error();

    base::set_up_daemon_log("eventd");  // journal priorities under systemd (base/daemon_log.hpp)

    sigset_t signals;
    sigemptyset(&signals);
    for (int s : {SIGTERM, SIGINT, SIGHUP, SIGQUIT}) sigaddset(&signals, s);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before any thread starts
    signal(SIGPIPE, SIG_IGN);
    const int signal_fd = signalfd(-1, &signals, SFD_CLOEXEC);
    // Without it SIGTERM would stay blocked and every stop end in SIGKILL (issue 40): refuse to
    // start instead, saying why.
    if (signal_fd < 0) {
        spdlog::critical("cannot start: signalfd for SIGTERM, SIGINT, SIGHUP and SIGQUIT failed: {}",
                         std::strerror(errno));
        return 1;
    }

    // Phase 1 (§10.1): configuration. A missing or invalid required key is fatal.
    base::FileWatch watch(config_path);
    auto loaded = eventd::load_eventd_config(config_path);
    if (!loaded) {
        spdlog::critical("cannot start: {}", loaded.error().message);
        return 1;
    }
    for (const auto& p : loaded->problems) spdlog::warn("configuration key {}: {}", p.key, p.message);
    setenv("KMES_SOCKET", loaded->config.kmes_socket_path.c_str(), 1);  // libkmes finds the shim here

    // Every file eventd creates is private, whatever umask it was started with (issue 23).
    eventd::store::restrict_file_creation();
    eventd::install_test_hooks_from_environment();  // test-only builds; see test_hooks.hpp
    base::sync::install_throw_from_environment();   // and base/sync_point.hpp
    auto daemon = eventd::Daemon::start(*loaded);
    if (!daemon) {
        spdlog::critical("cannot start: {}", daemon.error().message);
        return 1;  // no READY=1
    }
    sd_notify(0, "READY=1\nSTATUS=ingesting");
    uint64_t watchdog_usec = 0;
    const bool watchdog = sd_watchdog_enabled(0, &watchdog_usec) > 0;
    // Wakes: signals, the config file, a failure (Daemon::failure_fd) — and this tick, for the
    // watchdog and the STATUS rates only (at least once a second). Nothing else: an idle eventd sleeps.
    const int tick_ms = watchdog ? static_cast<int>(std::max<uint64_t>(watchdog_usec / 2000, 10)) : 1000;

    bool dump = false;
    std::string stalled_why;  // why the watchdog pings stopped; empty while they go on
    bool source_gone = false;  // its watch hung up: polled no more (it would stay readable)
    for (bool running = true; running;) {
        pollfd fds[4] = {{signal_fd, POLLIN, 0},
                         {watch.fd(), POLLIN, 0},
                         {(*daemon)->failure_fd(), POLLIN, 0},
                         {source_gone ? -1 : (*daemon)->source_watch_fd(), POLLRDHUP, 0}};
        poll(fds, 4, std::min(tick_ms, 1000));
        source_gone = source_gone || (fds[3].revents & (POLLHUP | POLLRDHUP | POLLERR)) != 0;
        // Repeated every tick: a drain's own attachment can hang up a moment after the watch.
        if (source_gone) (*daemon)->source_hung_up();
        if (watchdog) {
            // Issue 40: pinged only while eventd makes progress — a stuck writer or query thread
            // stops the pings, and systemd restarts eventd WatchdogSec later.
            const auto stall = (*daemon)->stalled(std::chrono::microseconds(watchdog_usec / 2));
            if (!stall) {
                sd_notify(0, "WATCHDOG=1");
                if (!stalled_why.empty()) spdlog::warn("watchdog: progress again; pings resumed");
                stalled_why.clear();
            } else if (stalled_why.empty()) {
                stalled_why = *stall;
                spdlog::critical("watchdog: {}: WATCHDOG=1 no longer sent (systemd restarts eventd)", stalled_why);
                sd_notifyf(0, "STATUS=stalled: %s", stalled_why.c_str());
            }
        }
        if ((*daemon)->failed()) break;
        (*daemon)->tick();  // rates for STATUS
        if (fds[1].revents & POLLIN && watch.changed()) (*daemon)->reload(config_path);
        if (!(fds[0].revents & POLLIN)) continue;
        signalfd_siginfo info{};
        if (read(signal_fd, &info, sizeof info) != sizeof info) continue;
        switch (info.ssi_signo) {
            case SIGHUP:
                (*daemon)->reload(config_path);
                break;
            case SIGQUIT:
                dump = true;
                [[fallthrough]];
            default:
                spdlog::info("signal {}: shutting down", strsignal(static_cast<int>(info.ssi_signo)));
                running = false;
        }
    }
    const bool failed = (*daemon)->failed();
    sd_notify(0, "STOPPING=1");
    (*daemon)->shutdown(dump);
    return failed ? 1 : 0;
}
