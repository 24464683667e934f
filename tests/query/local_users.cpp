#include "local_users.hpp"

#include <grp.h>
#include <pwd.h>

#include <cstdlib>
#include <string>

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
    if (!getgrnam("eventd-auditors")) run("groupadd --system eventd-auditors");
    if (!getpwnam("eventd-adm"))
        run("useradd --system --no-create-home --shell /usr/sbin/nologin --groups adm eventd-adm");
    if (!getpwnam("eventd-auditor"))
        run("useradd --system --no-create-home --shell /usr/sbin/nologin --groups eventd-auditors eventd-auditor");
    if (!member("adm", "eventd-adm")) run("usermod -a -G adm eventd-adm");
    if (!member("eventd-auditors", "eventd-auditor")) run("usermod -a -G eventd-auditors eventd-auditor");
    REQUIRE(getpwnam("nobody"));
}

}  // namespace eventd::query_it
