#include "support/local_users.hpp"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <utility>

#include <catch2/catch.hpp>

namespace eventd::query_it {
namespace {

void run(const std::string& command) {
    INFO(command);
    REQUIRE(std::system(command.c_str()) == 0);
}

bool member(const char* group_name, const char* user) {
    const ::group* g = getgrnam(group_name);
    if (!g) return false;
    for (char** m = g->gr_mem; *m; ++m)
        if (std::string(*m) == user) return true;
    return false;
}

}  // namespace

void ensure_test_users() {
    // Query test areas run side by side: one at a time checks and creates, or both would see a
    // user missing and the second useradd would fail with "already exists".
    const int lock = ::open("/tmp/eventd-test-users.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    REQUIRE(lock >= 0);
    REQUIRE(::flock(lock, LOCK_EX) == 0);
    struct Unlock {
        int fd;
        ~Unlock() { ::close(fd); }
    } unlock{lock};
    if (!getgrnam("eventd-auditors")) run("groupadd --system eventd-auditors");
    if (!getpwnam("eventd-adm"))
        run("useradd --system --no-create-home --shell /usr/sbin/nologin --groups adm eventd-adm");
    if (!getpwnam("eventd-auditor"))
        run("useradd --system --no-create-home --shell /usr/sbin/nologin --groups eventd-auditors eventd-auditor");
    if (!member("adm", "eventd-adm")) run("usermod -a -G adm eventd-adm");
    if (!member("eventd-auditors", "eventd-auditor")) run("usermod -a -G eventd-auditors eventd-auditor");
    REQUIRE(getpwnam("nobody"));
}

TemporaryUser::TemporaryUser(std::string name) : name_(std::move(name)) {
    const std::string lock_path = "/run/lock/eventd-test-user-" + name_ + ".lock";
    lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    REQUIRE(lock_fd_ >= 0);
    REQUIRE(::flock(lock_fd_, LOCK_EX) == 0);
    if (getpwnam(name_.c_str())) run("userdel " + name_);  // left by a run that died
}

TemporaryUser::~TemporaryUser() {
    if (getpwnam(name_.c_str())) (void)std::system(("userdel " + name_).c_str());
    ::close(lock_fd_);  // gives the flock back
}

void TemporaryUser::create() { run("useradd --system --no-create-home --shell /usr/sbin/nologin " + name_); }

}  // namespace eventd::query_it
