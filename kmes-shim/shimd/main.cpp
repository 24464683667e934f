// kmes-shimd: plays the kernel's part of KMES (DESIGN.md §2). See docs/KMES-SHIM.md.
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <filesystem>
#include <thread>

#include <spdlog/spdlog.h>

#include "base/daemon_log.hpp"
#include "base/cli.hpp"
#include "base/file_watch.hpp"
#include "base/sync_point.hpp"
#include "shim.hpp"

using namespace kmes::shim;

int main(int argc, char** argv) {
    base::cli::App app{
        "kmes-shimd — the KMES per-CPU event rings (the kernel's part of eventd's pipeline).\n"
        "Creates one shared-memory ring per CPU, accepts kmes_emit/kmes_attach over a Unix socket,\n"
        "and reloads its configuration on SIGHUP or when the file changes."};
    std::string config_path = "/etc/kmes/kmes.json";
    std::vector<std::string> generate;
    std::string socket_override;
    uint32_t cpus_override = 0;
    app.add_option("-c,--config", config_path, "configuration file (JSON); see docs/CONFIGURATION.md")
        ->capture_default_str();
    app.add_option("-s,--socket", socket_override, "socket path (overrides SocketPath)");
    app.add_option("--cpus", cpus_override, "number of rings (overrides Cpus; default: online CPUs)");
    app.add_option("-g,--generate", generate,
                   "start a built-in kernel emitter on every CPU: rate=N,payload=BYTES,origin=N,count=N,types=a:3+b:1 "
                   "(rate 0 = unlimited; count = events per CPU, 0 = no end; repeatable)");
    app.set_version_flag("-V,--version", "kmes-shimd " EVENTD_VERSION " (eventd)", "print the version and exit");
    if (const auto parsed = app.parse(argc, argv); !parsed.go_on) return parsed.error.empty() ? parsed.exit_code : app.print_error();

    base::set_up_daemon_log("kmes-shimd");  // journal priorities under systemd (base/daemon_log.hpp)
    base::sync::install_throw_from_environment();  // test-only builds: base/sync_point.hpp

    // Signals are taken synchronously through a signalfd by the main loop.
    sigset_t signals;
    sigemptyset(&signals);
    for (int s : {SIGTERM, SIGINT, SIGHUP, SIGQUIT}) sigaddset(&signals, s);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    signal(SIGPIPE, SIG_IGN);
    const int signal_fd = signalfd(-1, &signals, SFD_CLOEXEC);
    // Without it SIGTERM would stay blocked and every stop end in SIGKILL (issue 40): refuse to
    // start instead, saying why.
    if (signal_fd < 0) {
        spdlog::critical("cannot start: signalfd for SIGTERM, SIGINT, SIGHUP and SIGQUIT failed: {}",
                         std::strerror(errno));
        return 1;
    }

    // Watch before the first read: a change made after this point is seen by the main loop
    // (a watch set up after READY=1 would miss edits made right after readiness).
    base::FileWatch watch(config_path);
    if (!watch.watching())
        spdlog::warn("cannot watch the directory of {} for configuration changes; SIGHUP still reloads", config_path);
    ShimConfig defaults;
    ConfigLoad initial = load_config(config_path, defaults);
    if (initial.file_error) spdlog::error("{} — starting with defaults", *initial.file_error);
    ShimConfig boot = initial.config;
    if (!socket_override.empty()) boot.socket_path = socket_override;
    if (cpus_override) boot.cpus = cpus_override;
    for (const std::string& g : generate) {
        std::string error;
        auto spec = parse_generator_flag(g, &error);
        if (!spec) {
            spdlog::critical("{}", error);
            return 2;
        }
        boot.generators.push_back(*spec);
    }
    // Command-line overrides win over the file at every (re)load; they are not config changes.
    auto with_overrides = [&boot](ConfigLoad load) {
        load.config.socket_path = boot.socket_path;
        load.config.cpus = boot.cpus;
        load.config.generators = boot.generators;
        return load;
    };
    initial = with_overrides(std::move(initial));

    auto shim = Shim::start(boot);
    if (!shim) {
        spdlog::critical("cannot start: {}", shim.error().message);
        return 1;
    }
    (*shim)->start_generators(boot.generators);
    sd_notify(0, "READY=1\nSTATUS=rings live at the boot capacity");

    // §6.1.3: the "registry" becomes available ConfigDelayMs after boot; its keys are applied
    // then, by the main loop, which keeps answering signals meanwhile.
    using Clock = std::chrono::steady_clock;
    const auto registry_due = Clock::now() + std::chrono::milliseconds(boot.config_delay_ms);
    bool registry_applied = false;
    auto apply_registry_now = [&] {
        (*shim)->apply_registry(initial);
        registry_applied = true;
        sd_notifyf(0, "STATUS=%u rings of %llu bytes", (*shim)->rings().cpu_count(),
                   static_cast<unsigned long long>((*shim)->rings().capacity()));
    };
    if (boot.config_delay_ms == 0) apply_registry_now();

    auto reload = [&](const char* why) {
        if (!registry_applied) return;  // the delayed first read will see the file as it is then
        spdlog::info("reloading {} ({})", config_path, why);
        (*shim)->apply_registry(with_overrides(load_config(config_path, (*shim)->config())));
    };
    int exit_code = 0;
    for (bool running = true; running;) {
        pollfd fds[2] = {{signal_fd, POLLIN, 0}, {watch.fd(), POLLIN, 0}};
        int timeout_ms = 10'000;
        if (!registry_applied) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(registry_due - Clock::now());
            timeout_ms = static_cast<int>(std::clamp<int64_t>(left.count(), 0, timeout_ms));
        }
        const int ready = poll(fds, 2, timeout_ms);
        if (!registry_applied && Clock::now() >= registry_due) {
            // Re-read the file: it may have been edited during the delay.
            initial = with_overrides(load_config(config_path, defaults));
            apply_registry_now();
        }
        if (ready == 0) {
            (*shim)->collect_garbage();
            continue;
        }
        if (fds[1].revents & POLLIN && watch.changed()) reload("file changed");
        if (fds[0].revents & POLLIN) {
            signalfd_siginfo info{};
            if (read(signal_fd, &info, sizeof info) != sizeof info) continue;
            if (info.ssi_signo == SIGHUP) {
                reload("SIGHUP");
            } else {
                spdlog::info("signal {}: shutting down", strsignal(static_cast<int>(info.ssi_signo)));
                running = false;
            }
        }
    }
    sd_notify(0, "STOPPING=1");
    (*shim)->stop();
    if (auto failure = (*shim)->failure()) {
        spdlog::critical("stopped after a failure: {}", *failure);
        return 1;
    }
    spdlog::info("stopped");
    return exit_code;
}
