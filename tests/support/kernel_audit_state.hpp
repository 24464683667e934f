// The kernel's audit state for tests that change it (test_audit.cpp; the query tests' audit
// access test): taken first, put back at destruction whatever the test did and however it ended.
// Such tests run alone (meson is_parallel: false): one audit daemon per machine.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace kmes::it {

// Run a shell command; its stdout (stderr goes to the test's log).
std::string run(const std::string& command);
// The non-empty lines of `text`.
std::vector<std::string> lines(const std::string& text);
// `auditctl -s` as name → value.
std::map<std::string, std::string> audit_status();
// `auditctl -l`, one rule per line (empty when "No rules").
std::vector<std::string> audit_rules();

// The kernel's audit state at construction, put back at destruction: rules added since are
// removed (auditctl -l prints each in a form auditctl -d / -W accepts), enabled, backlog limit
// and wait time set back. A daemon registered since is a dead shim by then (the kernel forgets
// a daemon whose socket is gone). Every audit test needs the daemon role free: the constructor
// REQUIREs that no audit daemon (auditd) is registered.
//
// The kernel's audit state is one per machine, and meson's is_parallel only keeps the tests of
// one `meson test` apart: two test runs (a developer's and a sanitizer lane's, or two build
// directories) would take the daemon role from each other. So the first thing taken is an
// exclusive flock on /run/lock/eventd-kernel-audit-tests.lock (waited for), the last thing
// given back.
class KernelAuditState {
public:
    KernelAuditState();
    ~KernelAuditState();
    const std::map<std::string, std::string>& status() const { return status_; }
    const std::vector<std::string>& rules() const { return rules_; }

private:
    int lock_fd_;  // first: held before the state is read, released after it is put back
    std::map<std::string, std::string> status_;
    std::vector<std::string> rules_;
};

}  // namespace kmes::it
