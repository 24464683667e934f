// [audit]: kmes-shimd's audit source against the real kernel (issue 24; docs/AUDIT.md). These
// tests change machine-wide state (the audit daemon role, rules, the enabled flag, the
// backlog): meson runs them alone (is_parallel: false), and a KernelAuditState taken first
// puts the kernel back as it was, whatever the test did and however it ended.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "eventually.hpp"
#include "ring_capture.hpp"
#include "shim_fixture.hpp"

namespace kmes::it {
namespace {

using nlohmann::json;
using std::chrono::seconds;

// Run a command; its stdout (stderr goes to the test's log).
std::string run(const std::string& command) {
    std::string out;
    FILE* pipe = popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    char buffer[4096];
    for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
    pclose(pipe);
    return out;
}

std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) out.push_back(line);
    return out;
}

std::map<std::string, std::string> audit_status() {
    std::map<std::string, std::string> s;
    for (const std::string& line : lines(run("auditctl -s"))) {
        const auto space = line.find(' ');
        if (space != std::string::npos) s[line.substr(0, space)] = line.substr(space + 1);
    }
    return s;
}

std::vector<std::string> audit_rules() {
    std::vector<std::string> rules = lines(run("auditctl -l"));
    if (rules.size() == 1 && rules[0] == "No rules") rules.clear();
    return rules;
}

// `line`'s words, each in single quotes: a rule holds shell syntax (`-F auid>=1000` would be a
// redirection), and auditctl -l never prints a quote itself.
std::string quoted_words(const std::string& line) {
    std::string out;
    std::istringstream in(line);
    for (std::string word; in >> word;) out += " '" + word + "'";
    return out;
}

// The kernel's audit state at construction, put back at destruction: rules added since are
// removed (auditctl -l prints each in a form auditctl -d / -W accepts), enabled, backlog limit
// and wait time set back. A daemon registered since is a dead shim by then (the kernel forgets
// a daemon whose socket is gone).
class KernelAuditState {
public:
    // Every audit test needs the daemon role free: another audit daemon (auditd) must be stopped.
    KernelAuditState() : status_(audit_status()), rules_(audit_rules()) {
        INFO("another audit daemon is registered: these tests need the role (stop auditd first)");
        REQUIRE(status_.count("pid"));
        REQUIRE(status_.at("pid") == "0");
    }
    ~KernelAuditState() {
        const std::set<std::string> before(rules_.begin(), rules_.end());
        std::vector<std::string> now = audit_rules();
        for (auto it = now.rbegin(); it != now.rend(); ++it) {
            if (before.count(*it)) continue;
            std::string undo = *it;
            if (undo.rfind("-a ", 0) == 0) undo.replace(0, 2, "-d");
            if (undo.rfind("-w ", 0) == 0) undo.replace(0, 2, "-W");
            run("auditctl" + quoted_words(undo) + " >/dev/null 2>&1");
        }
        run("auditctl -b " + status_["backlog_limit"] + " --backlog_wait_time " + status_["backlog_wait_time"] +
            " -e " + status_["enabled"] + " >/dev/null 2>&1");
    }
    const std::map<std::string, std::string>& status() const { return status_; }
    const std::vector<std::string>& rules() const { return rules_; }

private:
    std::map<std::string, std::string> status_;
    std::vector<std::string> rules_;
};

// `count` runs of /bin/true with a marker argument each; waits for them.
void run_true(const std::string& marker, int count) {
    for (int i = 0; i < count; ++i) {
        const pid_t pid = fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            const std::string arg = marker + "-" + std::to_string(i);
            execl("/bin/true", "/bin/true", arg.c_str(), static_cast<char*>(nullptr));
            _exit(127);
        }
        int status = 0;
        REQUIRE(waitpid(pid, &status, 0) == pid);
    }
}

// audit.syscall events of `key` in every ring.
std::vector<json> audit_events(uint32_t cpus, const std::string& key) {
    std::vector<json> out;
    for (const CapturedEvent& e : of_type(all_events(cpus), "audit.syscall")) {
        json payload = e.payload();
        if (payload.value("key", json()) == key) out.push_back(std::move(payload));
    }
    return out;
}

std::string rules_file(const TempDir& dir, const std::string& key) {
    const std::string path = dir / "audit.rules";
    std::ofstream(path) << "# the test's rules: every execve of /bin/true, nothing else\n"
                        << "-a always,exit -F arch=b64 -S execve -F exe=/usr/bin/true -k " << key << "\n";
    return path;
}

TEST_CASE("daemon mode: N execs give exactly N audit.syscall events; stop and SIGKILL leave the kernel as it was",
          "[audit]") {
    KernelAuditState before;
    TempDir files;
    const std::string key = "kmes-it-" + std::to_string(getpid());
    const json config = {{"Audit", {{"Mode", "daemon"}, {"RulesFile", rules_file(files, key)}}}};
    constexpr uint32_t kCpus = 2;
    {
        auto shim = ShimProcess::start(ShimOptions{.config = config, .cpus = kCpus});
        REQUIRE(shim->wait_log("audit: daemon mode", std::chrono::seconds(10)));
        // The kernel: our pid is the audit daemon, audit on, our rule and our self-exclusion.
        CHECK(audit_status().at("pid") == std::to_string(shim->pid()));
        CHECK(audit_status().at("enabled") == "1");
        CHECK(audit_status().at("backlog_wait_time") == "0");
        const auto loaded = audit_rules();
        CHECK(std::count_if(loaded.begin(), loaded.end(),
                            [&](const std::string& r) { return r.find(key) != std::string::npos; }) == 1);

        constexpr int kExecs = 25;
        run_true(key, kExecs);
        std::vector<json> events;
        CHECK(eventually([&] { return (events = audit_events(kCpus, key)).size() >= kExecs; }, seconds(10)));
        REQUIRE(events.size() == kExecs);  // exactly: not one more after a settle
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        CHECK(audit_events(kCpus, key).size() == kExecs);
        std::set<std::string> markers;
        for (const json& e : events) {
            INFO(e.dump());
            CHECK(e["syscall"] == "execve");
            CHECK(e["success"] == "yes");
            CHECK(e["exe"] == "/usr/bin/true");
            CHECK(e["uid"] == 0);
            CHECK(e["uid_name"] == "root");
            CHECK(e.contains("auid"));
            CHECK(e["argv"].size() == 2);
            CHECK(e["argv"][0] == "/bin/true");
            markers.insert(e["argv"][1].get<std::string>());
            CHECK(e["record_types"].front() == "SYSCALL");
            CHECK(e["audit_time"].get<int64_t>() > 0);
            CHECK(e["cwd"].is_string());
        }
        CHECK(markers.size() == kExecs);  // every exec once
        CHECK(shim->terminate() == 0);
    }
    // SIGTERM: our rules gone, the role released, the settings restored.
    CHECK(audit_rules() == before.rules());
    CHECK(audit_status().at("pid") == "0");
    CHECK(audit_status().at("enabled") == before.status().at("enabled"));
    CHECK(audit_status().at("backlog_limit") == before.status().at("backlog_limit"));
    CHECK(audit_status().at("backlog_wait_time") == before.status().at("backlog_wait_time"));

    // SIGKILL: nothing cleaned up...
    {
        ShimOptions options{.config = config, .cpus = kCpus};
        ShimProcess killed(options);
        std::string why;
        REQUIRE(killed.wait_ready(&why));
        REQUIRE(killed.wait_log("audit: daemon mode", std::chrono::seconds(10)));
        killed.kill();
        CHECK(audit_rules() != before.rules());
        // ...until the next start on the same runtime directory, which undoes it first.
        const std::string socket = killed.socket_path();
        ShimOptions again{.config = config, .cpus = kCpus, .socket_path = socket};
        auto next = ShimProcess::start(again);
        REQUIRE(next->wait_log("audit: daemon mode", std::chrono::seconds(10)));
        INFO(next->log());
        // The test's rule and the shim's exclusion of its own pid.
        CHECK(next->log().find("removed 2 rule(s) a previous kmes-shimd left loaded") != std::string::npos);
        CHECK(next->terminate() == 0);
    }
    CHECK(audit_rules() == before.rules());
    CHECK(audit_status().at("pid") == "0");
    CHECK(audit_status().at("enabled") == before.status().at("enabled"));
}

// The audit.lost events of every ring: records lost, by source.
std::map<std::string, uint64_t> lost_records(uint32_t cpus) {
    std::map<std::string, uint64_t> lost;
    for (const CapturedEvent& e : of_type(all_events(cpus), "audit.lost")) {
        const json p = e.payload();
        lost[p.value("source", "?")] += p.value("records", uint64_t{0});
    }
    return lost;
}

TEST_CASE("nothing lost silently: execs while the shim is frozen are stored or counted in audit.lost", "[audit]") {
    KernelAuditState before;
    TempDir files;
    const std::string key = "kmes-lost-" + std::to_string(getpid());
    constexpr uint32_t kCpus = 2;
    // The smallest backlog and no waiting: the kernel drops (and counts) what does not fit.
    auto shim = ShimProcess::start(ShimOptions{
        .config = {{"Audit", {{"Mode", "daemon"}, {"RulesFile", rules_file(files, key)}, {"BacklogLimit", 64}}},
                   {"BufferCapacity", 64 << 20}},
        .cpus = kCpus});
    REQUIRE(shim->wait_log("audit: daemon mode", std::chrono::seconds(10)));
    constexpr int kExecs = 2000;
    shim->freeze();
    run_true(key, kExecs);
    shim->thaw();
    // Stored events plus the lost records (the kernel's backlog, the socket's drops): every
    // exec is one or the other. A lost exec costs between 1 (the kernel gives up an event at
    // its first record) and all of its records (SYSCALL, EXECVE, CWD, PATH, PATH, PROCTITLE,
    // EOE), so the stored count and the lost records bound each other.
    size_t stored = 0;
    std::map<std::string, uint64_t> lost;
    CHECK(eventually(
        [&] {
            stored = audit_events(kCpus, key).size();
            lost = lost_records(kCpus);
            return stored + lost["kernel"] + lost["socket"] >= kExecs;
        },
        seconds(20)));
    INFO("stored " << stored << ", lost records: kernel " << lost["kernel"] << ", socket " << lost["socket"]);
    CHECK(stored < size_t(kExecs));  // the backlog of 64 cannot have held 2000 execs
    CHECK(lost["kernel"] > 0);
    CHECK(stored + lost["kernel"] + lost["socket"] >= size_t(kExecs));
    CHECK(stored + (lost["kernel"] + lost["socket"]) / 7 <= size_t(kExecs));
    CHECK(shim->terminate() == 0);
}

TEST_CASE("the shipped rules load and are removed at stop", "[audit]") {
    KernelAuditState before;
    const std::string shipped = std::string(KMES_SOURCE_ROOT) + "/config/audit.rules";
    auto shim =
        ShimProcess::start(ShimOptions{.config = {{"Audit", {{"Mode", "auto"}, {"RulesFile", shipped}}}}, .cpus = 2});
    REQUIRE(shim->wait_log("audit: daemon mode, 12 rule(s) loaded", std::chrono::seconds(10)));
    CHECK(audit_rules().size() == before.rules().size() + 12);
    CHECK(shim->terminate() == 0);
    CHECK(audit_rules() == before.rules());
    CHECK(audit_status().at("pid") == "0");
}

TEST_CASE("a reload that changes Audit restarts the source; off gives everything back", "[audit]") {
    KernelAuditState before;
    TempDir files;
    const std::string key = "kmes-reload-" + std::to_string(getpid());
    const json daemon = {{"Audit", {{"Mode", "daemon"}, {"RulesFile", rules_file(files, key)}}}};
    auto shim = ShimProcess::start(ShimOptions{.config = daemon, .cpus = 2});
    REQUIRE(shim->wait_log("audit: daemon mode, 2 rule(s) loaded", std::chrono::seconds(10)));
    // Off: rules removed, role released, settings restored — with the shim still running.
    shim->write_config({{"Audit", {{"Mode", "off"}}}});
    CHECK(eventually([&] { return audit_status().at("pid") == "0" && audit_rules() == before.rules(); }));
    CHECK(audit_status().at("enabled") == before.status().at("enabled"));
    // A rejected value keeps the setting in force (here: still off) and says so.
    shim->write_config({{"Audit", {{"Mode", "sometimes"}}}});
    CHECK(shim->wait_log("configuration key Audit.Mode: value \"sometimes\" rejected", std::chrono::seconds(10)));
    CHECK(audit_status().at("pid") == "0");
    // And back on.
    shim->write_config(daemon);
    CHECK(eventually([&] { return audit_status().at("pid") == std::to_string(shim->pid()); }));
    CHECK(shim->terminate() == 0);
    CHECK(audit_rules() == before.rules());
    CHECK(audit_status().at("pid") == "0");
}

TEST_CASE("multicast mode reads beside a registered audit daemon and changes nothing in the kernel", "[audit]") {
    KernelAuditState before;
    TempDir files;
    const std::string key = "kmes-mc-" + std::to_string(getpid());
    constexpr uint32_t kCpus = 2;
    // The daemon role is taken by a first shim (daemon mode, our rule); a second one in auto
    // mode finds it taken and joins the multicast group.
    auto daemon = ShimProcess::start(
        ShimOptions{.config = {{"Audit", {{"Mode", "daemon"}, {"RulesFile", rules_file(files, key)}}}}, .cpus = kCpus});
    REQUIRE(daemon->wait_log("audit: daemon mode", std::chrono::seconds(10)));
    const auto rules_with_daemon = audit_rules();
    {
        auto reader = ShimProcess::start(ShimOptions{.config = {{"Audit", {{"Mode", "auto"}}}}, .cpus = kCpus});
        REQUIRE(reader->wait_log("audit: multicast mode", std::chrono::seconds(10)));
        CHECK(audit_status().at("pid") == std::to_string(daemon->pid()));
        CHECK(audit_rules() == rules_with_daemon);
        run_true(key, 10);
        // The reader's own rings (this process's libkmes points at the last shim started).
        CHECK(eventually([&] { return audit_events(kCpus, key).size() == 10; }, seconds(10)));
        CHECK(reader->terminate() == 0);
    }
    CHECK(audit_rules() == rules_with_daemon);  // the reader removed nothing
    CHECK(daemon->terminate() == 0);
}

}  // namespace
}  // namespace kmes::it
