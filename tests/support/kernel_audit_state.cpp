#include "support/kernel_audit_state.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
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

// A test killed by a signal runs no destructor: meson's timeout sends SIGTERM, Ctrl-C SIGINT.
// While a KernelAuditState lives, those signals first put the kernel back as it was taken — a
// shell script built at construction (every rule deleted, the rules found then added back, the
// settings set back: the script needs no allocation in the handler, only fork and exec, which
// are async-signal-safe) — then go on to the handler that was there before (Catch2's report).
struct SignalRescue {
    std::string script;
    struct sigaction previous_term {};
    struct sigaction previous_int {};
};
SignalRescue* rescue = nullptr;  // the live one, if any (kernel-audit tests run one at a time)

void restore_on_signal(int signo) {
    if (rescue) {
        const pid_t child = fork();
        if (child == 0) {
            execl("/bin/sh", "sh", "-c", rescue->script.c_str(), static_cast<char*>(nullptr));
            _exit(127);
        }
        if (child > 0) {
            int status = 0;
            while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
            }
        }
    }
    if (!rescue) {
        signal(signo, SIG_DFL);
        raise(signo);
        return;
    }
    const struct sigaction& previous = signo == SIGTERM ? rescue->previous_term : rescue->previous_int;
    if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN && !(previous.sa_flags & SA_SIGINFO)) {
        previous.sa_handler(signo);
        return;
    }
    signal(signo, SIG_DFL);
    raise(signo);
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
    // Killed by a signal (meson's timeout): the kernel is put back all the same (SignalRescue).
    static SignalRescue armed;
    armed.script = "auditctl -D >/dev/null 2>&1";
    for (const std::string& rule : rules_) armed.script += "; auditctl" + quoted_words(rule) + " >/dev/null 2>&1";
    armed.script += "; auditctl -b " + status_["backlog_limit"] + " --backlog_wait_time " +
                    status_["backlog_wait_time"] + " -e " + status_["enabled"] + " >/dev/null 2>&1";
    struct sigaction on_signal {};
    on_signal.sa_handler = restore_on_signal;
    sigemptyset(&on_signal.sa_mask);
    sigaction(SIGTERM, &on_signal, &armed.previous_term);
    sigaction(SIGINT, &on_signal, &armed.previous_int);
    rescue = &armed;
}

KernelAuditState::~KernelAuditState() {
    if (rescue) {  // a signal from here on finds the kernel being put back by this destructor
        sigaction(SIGTERM, &rescue->previous_term, nullptr);
        sigaction(SIGINT, &rescue->previous_int, nullptr);
        rescue = nullptr;
    }
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
