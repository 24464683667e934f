// The real local users and groups of the access tests, created idempotently (groupadd/useradd
// --system): group eventd-auditors; eventd-adm (member of adm); eventd-auditor (member of
// eventd-auditors). `nobody` exists on every system.
#pragma once

#include <string>

namespace eventd::query_it {

// REQUIREs that the users exist afterwards (the tests run as root).
void ensure_test_users();

// A real user that does not exist when the test starts and is created by it (a user created
// after eventd loaded its policy, issue 39), removed at destruction however the test ended.
// Test runs side by side (two worktrees, sanitizer lanes) would add and delete the same name
// under each other: an exclusive flock on /run/lock/eventd-test-user-NAME.lock is held from
// construction (a user left by a run that died is then removed) to destruction.
class TemporaryUser {
public:
    explicit TemporaryUser(std::string name);
    ~TemporaryUser();
    TemporaryUser(const TemporaryUser&) = delete;
    TemporaryUser& operator=(const TemporaryUser&) = delete;

    const std::string& name() const { return name_; }
    void create();  // useradd --system, no home, no login shell (REQUIREs success)

private:
    std::string name_;
    int lock_fd_;
};

}  // namespace eventd::query_it
