// The systemd units (issue 3 "systemd and install"): `systemd-analyze verify` on the units the
// build generates. They name installed binaries (e.g. /usr/local/sbin/eventd) that do not exist
// in a build tree, so the test verifies copies whose ExecStart points at the binaries just
// built — then verify has nothing left to excuse: any output (unknown directive, bad value,
// missing dependency unit) fails. A copy with a bogus directive shows the check can fail.
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>

#include <catch2/catch.hpp>

#include "support/daemon_process.hpp"
#include "support/shim_fixture.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;

std::string env(const char* name) {
    const char* v = std::getenv(name);
    if (!v || !*v) FAIL(name << " is not set: run the tests through `meson test`");
    return v;
}

// Run a shell command; its exit status and combined output.
std::pair<int, std::string> run(const std::string& command) {
    FILE* pipe = popen((command + " 2>&1").c_str(), "r");
    REQUIRE(pipe);
    std::string out;
    char buffer[4096];
    for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
    const int status = pclose(pipe);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// Copy `unit` into `dir` with the ExecStart binary replaced by `binary`.
std::string copy_unit(const std::string& unit, const std::string& dir, const std::string& binary,
                      const std::string& extra_service_line = "") {
    std::string text = kmes::it::read_text(env("EVENTD_UNIT_DIR") + "/" + unit);
    REQUIRE(!text.empty());
    const std::regex exec("^ExecStart=\\S+", std::regex::multiline);
    REQUIRE(std::regex_search(text, exec));
    text = std::regex_replace(text, exec, "ExecStart=" + binary);
    if (!extra_service_line.empty())
        text = std::regex_replace(text, std::regex("\\[Service\\]\n"), "[Service]\n" + extra_service_line + "\n");
    const std::string path = dir + "/" + unit;
    std::ofstream(path) << text;
    return path;
}

// Whether `text` has a line starting with the regular expression `line`.
bool has(const std::string& text, const char* line) {
    return std::regex_search(text, std::regex(std::string("^") + line, std::regex::multiline));
}

std::pair<int, std::string> verify(const std::string& dir) {
    return run("systemd-analyze verify " + dir + "/eventd.service " + dir + "/kmes-shim.service " + dir +
               "/eventd-forward.service " + dir + "/eventd-metrics.service " + dir + "/eventd-metrics.timer");
}

// The metrics service and its timer (the timer as it is installed).
void copy_metrics_units(const std::string& dir) {
    copy_unit("eventd-metrics.service", dir, env("EVENTD_METRICS_TEXTFILE"));
    fs::copy_file(env("EVENTD_UNIT_DIR") + "/eventd-metrics.timer", dir + "/eventd-metrics.timer");
}

}  // namespace

TEST_CASE("systemd: systemd-analyze verify accepts the units with nothing to report", "[systemd]") {
    REQUIRE(run("command -v systemd-analyze").first == 0);
    test_support::TempDir dir;
    copy_unit("eventd.service", dir.str(), env("EVENTD"));
    copy_unit("kmes-shim.service", dir.str(), env("KMES_SHIMD"));
    copy_unit("eventd-forward.service", dir.str(), env("EVENTD_FORWARD"));
    copy_metrics_units(dir.str());
    const auto [status, output] = verify(dir.str());
    INFO(output);
    CHECK(status == 0);
    CHECK(output.empty());
}

TEST_CASE("systemd: the verify check fails on a unit with an unknown directive", "[systemd]") {
    test_support::TempDir dir;
    copy_unit("eventd.service", dir.str(), env("EVENTD"), "NotADirective=1");
    copy_unit("kmes-shim.service", dir.str(), env("KMES_SHIMD"));
    copy_unit("eventd-forward.service", dir.str(), env("EVENTD_FORWARD"));
    copy_metrics_units(dir.str());
    const auto [status, output] = verify(dir.str());
    INFO(output);
    CHECK(output.find("NotADirective") != std::string::npos);
}

TEST_CASE("systemd: eventd.service is Type=notify with a watchdog, requires and follows the shim, reloads by SIGHUP",
          "[systemd]") {
    const std::string eventd = kmes::it::read_text(env("EVENTD_UNIT_DIR") + "/eventd.service");
    const std::string shim = kmes::it::read_text(env("EVENTD_UNIT_DIR") + "/kmes-shim.service");
    CHECK(has(eventd, "Type=notify$"));
    CHECK(has(shim, "Type=notify$"));
    CHECK(has(eventd, "Requires=.*kmes-shim\\.service"));
    CHECK(has(eventd, "After=.*kmes-shim\\.service"));
    CHECK(has(eventd, "Restart=on-failure$"));
    CHECK(has(eventd, "WatchdogSec=[1-9]"));
    CHECK(has(eventd, "ExecReload=.*-HUP"));
    CHECK(has(eventd, "StateDirectory=eventd"));
    CHECK(has(eventd, "RuntimeDirectory=eventd"));
    CHECK(has(eventd, "ExecStart=\\S*/eventd --config /etc/eventd/eventd\\.json$"));
}

TEST_CASE("systemd: eventd-forward.service is Type=notify, requires and follows eventd, runs as its own user",
          "[systemd]") {
    const std::string forward = kmes::it::read_text(env("EVENTD_UNIT_DIR") + "/eventd-forward.service");
    CHECK(has(forward, "Type=notify$"));
    CHECK(has(forward, "Requires=.*eventd\\.service"));
    CHECK(has(forward, "After=.*eventd\\.service"));
    CHECK(has(forward, "User=eventd-forward$"));
    CHECK(has(forward, "StateDirectory=eventd-forward$"));
    CHECK(has(forward, "ExecStart=\\S*/eventd-forward --config /etc/eventd/eventd-forward\\.json$"));
}

TEST_CASE("systemd: eventd-metrics runs every 15 s, as an administrator, writing only the textfile directory",
          "[systemd]") {
    const std::string service = kmes::it::read_text(env("EVENTD_UNIT_DIR") + "/eventd-metrics.service");
    const std::string timer = kmes::it::read_text(env("EVENTD_UNIT_DIR") + "/eventd-metrics.timer");
    CHECK(has(service, "Type=oneshot"));
    CHECK(has(service, "ExecStart=.*/eventd-metrics-textfile$"));
    CHECK(has(service, "Environment=EVENTD_METRICS_FILE=/var/lib/prometheus/node-exporter/eventd\\.prom"));
    CHECK(has(service, "SupplementaryGroups=adm"));
    CHECK(has(service, "ReadWritePaths=-/var/lib/prometheus/node-exporter"));
    CHECK(has(timer, "OnUnitActiveSec=15s"));
    CHECK(has(timer, "WantedBy=timers\\.target"));
}
