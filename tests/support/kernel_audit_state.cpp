#include "support/kernel_audit_state.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <sstream>

#include <catch2/catch.hpp>

namespace kmes::it {
namespace {

// `line`'s words, each in single quotes: a rule holds shell syntax (`-F auid>=1000` would be a
// redirection), and auditctl -l never prints a quote itself.
std::string quoted_words(const std::string& line) {
    std::string out;
    std::istringstream in(line);
    for (std::string word; in >> word;) out += " '" + word + "'";
    return out;
}

}  // namespace

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

namespace {

// Waits for the machine-wide lock of the kernel-audit tests (KernelAuditState's comment).
int take_kernel_audit_lock() {
    const char* dir = access("/run/lock", W_OK) == 0 ? "/run/lock" : "/tmp";
    const std::string path = std::string(dir) + "/eventd-kernel-audit-tests.lock";
    const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    INFO("lock file " << path << ": " << std::strerror(errno));
    REQUIRE(fd >= 0);
    int rc;
    do rc = flock(fd, LOCK_EX);
    while (rc != 0 && errno == EINTR);
    REQUIRE(rc == 0);
    return fd;
}

}  // namespace

KernelAuditState::KernelAuditState()
    : lock_fd_(take_kernel_audit_lock()), status_(audit_status()), rules_(audit_rules()) {
    const bool role_free = status_.count("pid") && status_.at("pid") == "0";
    // A constructor that fails runs no destructor: give the lock back first, or the next
    // audit test of this process would wait on it forever (flock is per open file).
    if (!role_free) close(lock_fd_);
    INFO("another audit daemon is registered (auditctl -s pid " << (status_.count("pid") ? status_.at("pid") : "missing")
                                                                << "): these tests need the role (stop auditd first)");
    REQUIRE(role_free);
}

KernelAuditState::~KernelAuditState() {
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
    close(lock_fd_);  // the next kernel-audit test, in this run or another, may go
}

}  // namespace kmes::it
