// [audit-access]: issue 24 item 4 end to end — the kernel's audit events of processes run by
// real users (setpriv), recorded by kmes-shimd in daemon mode, stored by eventd and read back
// under docs/ACCESS-CONTROL.md §5.1's policy: each user reads the audit events of their own
// processes, with the fields granted to `self`, and nothing of anyone else's; administrators
// read all. Changes the kernel's audit state (restored by KernelAuditState): run alone.
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include <catch2/catch.hpp>

#include "support/eventually.hpp"
#include "support/kernel_audit_state.hpp"
#include "support/local_users.hpp"
#include "support/query_env.hpp"
#include "support/stream_helpers.hpp"
#include "support/temp_dir.hpp"

namespace eventd::query_it {
namespace {

using nlohmann::json;

const json kAuditSelfPolicy = {
    {"Events",
     {{"*", json::array({{{"allow", {"group:adm"}}}})},
      {"audit", json::array({{{"allow", {"group:adm"}}},
                             {{"allow", {"self"}},
                              {"fields", {"timestamp", "event_type", "exe", "argv", "cwd", "success", "exit"}}}})}}}};

// /bin/true MARKER as `user` (root when empty), through setpriv like a login would give it.
void run_true_as(const std::string& user, const std::string& marker) {
    std::vector<std::string> argv{"/bin/true", marker};
    if (!user.empty()) {
        const auto as = lookup_user(user);
        REQUIRE(as);
        argv = command_as(as, argv);
    }
    const RunResult r = run_command(argv, std::chrono::seconds(10));
    REQUIRE(r.exit_code == 0);
}

int64_t count_as(QueryEnv& env, const std::string& query, const std::string& user) {
    const RunResult r = env.query(query, user.empty() ? std::nullopt : lookup_user(user));
    INFO(query << " as " << (user.empty() ? "root" : user) << ": " << r.err);
    REQUIRE(r.exit_code == 0);
    const auto records = parse_jsonl(r.out);
    REQUIRE(records.size() == 1);
    return records[0]["count"].get<int64_t>();
}

TEST_CASE("self: each user reads the kernel's audit events of their own processes, administrators all",
          "[audit-access]") {
    kmes::it::KernelAuditState before;
    ensure_test_users();
    const std::string key = "kmes-self-" + std::to_string(getpid());
    test_support::TempDir files;
    const std::string rules = files / "audit.rules";
    std::ofstream(rules) << "-a always,exit -F arch=b64 -S execve -F exe=/usr/bin/true -k " << key << "\n";
    EnvOptions options = fast_commits({{"Security", kAuditSelfPolicy}});
    options.kmes_config = {{"Audit", {{"Mode", "daemon"}, {"RulesFile", rules}}}};
    QueryEnv env(options);
    REQUIRE(env.shim().wait_log("audit: daemon mode", std::chrono::seconds(10)));

    for (int i = 0; i < 3; ++i) run_true_as("nobody", key + "-nobody-" + std::to_string(i));
    for (int i = 0; i < 2; ++i) run_true_as("eventd-auditor", key + "-auditor-" + std::to_string(i));
    run_true_as("", key + "-root");
    const std::string by_key = "EVENTS audit.syscall WHERE key == \"" + key + "\" COUNT";
    REQUIRE(test_support::eventually([&] { return count_as(env, by_key, "") == 6; }, std::chrono::seconds(20)));

    // Each user: their own execs, by a field granted to self.
    const std::string mine = "EVENTS audit.syscall WHERE exe == \"/usr/bin/true\" COUNT";
    CHECK(count_as(env, mine, "nobody") == 3);
    CHECK(count_as(env, mine, "eventd-auditor") == 2);
    const RunResult listed = env.query("EVENTS audit.syscall WHERE exe == \"/usr/bin/true\"", lookup_user("nobody"));
    REQUIRE(listed.exit_code == 0);
    const auto records = parse_jsonl(listed.out);
    REQUIRE(records.size() == 3);
    for (const json& r : records) {
        INFO(r.dump());
        CHECK(r["argv"][1].get<std::string>().rfind(key + "-nobody-", 0) == 0);
        CHECK_FALSE(r.contains("key"));   // not granted to self
        CHECK_FALSE(r.contains("auid"));
        CHECK(r["exe"] == "/usr/bin/true");
    }
    // `key` is not granted to self: no filtering on it either.
    const RunResult refused = env.query(by_key, lookup_user("nobody"));
    CHECK(refused.exit_code != 0);
    CHECK_THAT(refused.err, Catch::Contains("'key' cannot be used in WHERE"));
    // Administrators read everyone's, every field.
    CHECK(count_as(env, by_key, "eventd-adm") == 6);
}

}  // namespace
}  // namespace eventd::query_it
