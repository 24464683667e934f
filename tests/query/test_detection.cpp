// [audit-access] (issue 41; docs/DETECTION.md): Sigma rules evaluated by eventd on the kernel's
// audit events of real execs — kmes-shimd in audit daemon mode with an execve rule, eventd with
// a rule directory. Exactly one alert per matching exec, none for the look-alikes, and still
// exactly one each across a SIGKILL of eventd with execs while it is down. Changes the kernel's
// audit state (restored by KernelAuditState): runs in the query-audit test, alone.
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <set>
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

void run_true(const std::string& argument) {
    const RunResult r = run_command({"/bin/true", argument}, std::chrono::seconds(10));
    REQUIRE(r.exit_code == 0);
}

std::vector<json> alerts_of(QueryEnv& env, const std::string& rule_id) {
    const RunResult r = env.query("EVENTS alert.* WHERE rule_id == \"" + rule_id + "\"");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return parse_jsonl(r.out);
}

}  // namespace

TEST_CASE("detection: one alert per matching exec, none for look-alikes, exactly once across a SIGKILL of eventd",
          "[audit-access]") {
    kmes::it::KernelAuditState before;
    ensure_test_users();
    const std::string key = "kmes-detect-" + std::to_string(getpid());
    test_support::TempDir files;
    std::ofstream(files / "audit.rules") << "-a always,exit -F arch=b64 -S execve -F exe=/usr/bin/true -k " << key
                                         << "\n";
    const std::string rules_dir = files / "rules.d";
    std::filesystem::create_directories(rules_dir);
    const std::string rule_id = "5f0c2d1e-9a7b-4c3d-8e6f-" + std::to_string(100000000000 + getpid());
    std::ofstream(rules_dir + "/true_marker.yml") << "title: A marked run of true\n"
                                                  << "id: " << rule_id << "\n"
                                                  << "level: high\n"
                                                  << "tags: [test.detection]\n"
                                                  << "logsource: {product: linux, service: auditd}\n"
                                                  << "detection:\n"
                                                  << "    selection:\n"
                                                  << "        type: EXECVE\n"
                                                  << "        a0|endswith: /true\n"
                                                  << "        a1|startswith: '" << key << "-match-'\n"
                                                  << "    filter:\n"
                                                  << "        a1|endswith: '-benign'\n"
                                                  << "    condition: selection and not filter\n";
    std::ofstream(rules_dir + "/broken.yml") << "title: no id here\nlogsource: {product: linux, service: auditd}\n";
    EnvOptions options = fast_commits({{"DetectionRulesPath", rules_dir}});
    options.kmes_config = {{"Audit", {{"Mode", "daemon"}, {"RulesFile", files / "audit.rules"}}}};
    QueryEnv env(options);
    REQUIRE(env.shim().wait_log("audit: daemon mode", std::chrono::seconds(10)));
    REQUIRE(env.eventd().wait_log("detection: 1 rule(s) loaded", std::chrono::seconds(10)));
    CHECK(env.eventd().wait_log("broken.yml refused (the others load): no id", std::chrono::seconds(1)));

    for (int i = 1; i <= 3; ++i) run_true(key + "-match-" + std::to_string(i));
    run_true(key + "-other-1");         // not the prefix
    run_true(key + "-match-9-benign");  // the filter
    const std::string by_key = "EVENTS audit.syscall WHERE key == \"" + key + "\" COUNT";
    REQUIRE(
        test_support::eventually([&] { return parse_jsonl(env.query(by_key).out).at(0)["count"].get<int64_t>() == 5; },
                                 std::chrono::seconds(20)));
    REQUIRE(test_support::eventually([&] { return alerts_of(env, rule_id).size() >= 3; }, std::chrono::seconds(20)));
    std::set<std::string> arguments;
    for (const json& a : alerts_of(env, rule_id)) {
        INFO(a.dump());
        CHECK(a["event_type"] == "alert.high");
        CHECK(a["title"] == "A marked run of true");
        CHECK(a["tags"] == json::array({"test.detection"}));
        CHECK(a["rule_file"] == "true_marker.yml");
        CHECK(a["event"]["event_type"] == "audit.syscall");
        CHECK(a["event"]["sequence"].is_number());
        REQUIRE(a["fields"]["a1"].size() == 1);
        arguments.insert(a["fields"]["a1"][0].get<std::string>());
    }
    CHECK(arguments == std::set<std::string>{key + "-match-1", key + "-match-2", key + "-match-3"});

    // eventd killed; two more matching execs while it is down; the restarted eventd evaluates
    // from its persisted position: the two get their alerts, and none of the first three twice.
    env.eventd().kill();
    run_true(key + "-match-4");
    run_true(key + "-match-5");
    env.start_eventd();
    REQUIRE(test_support::eventually([&] { return alerts_of(env, rule_id).size() >= 5; }, std::chrono::seconds(30)));
    std::set<std::string> after;
    std::set<int64_t> triggers;
    const std::vector<json> all = alerts_of(env, rule_id);
    for (const json& a : all) {
        after.insert(a["fields"]["a1"][0].get<std::string>());
        triggers.insert(a["event"]["sequence"].get<int64_t>());
    }
    CHECK(all.size() == 5);
    CHECK(triggers.size() == 5);
    CHECK(after.size() == 5);
    // A reload (SIGHUP) reads the rule files again: a second rule applies from then on.
    const std::string second_id = "5f0c2d1e-9a7b-4c3d-8e6f-" + std::to_string(200000000000 + getpid());
    std::ofstream(rules_dir + "/true_second.yml")
        << "title: A second marked run\nid: " << second_id
        << "\nlevel: low\nlogsource: {product: linux, service: auditd}\n"
        << "detection:\n    selection:\n        a1|startswith: '" << key << "-second-'\n    condition: selection\n";
    env.eventd().signal(SIGHUP);
    REQUIRE(env.eventd().wait_log("detection: 2 rule(s) in", std::chrono::seconds(10)));
    run_true(key + "-second-1");
    REQUIRE(test_support::eventually([&] { return alerts_of(env, second_id).size() == 1; }, std::chrono::seconds(20)));
    CHECK(alerts_of(env, second_id).at(0)["event_type"] == "alert.low");
    // STATUS: the rules with their matches since this eventd started — the first rule's two
    // after the kill, and those of the first three its restart evaluated again (their alerts
    // stored once, above); the second rule's one — and the refused file with its reason.
    const RunResult status = env.query("STATUS");
    REQUIRE(status.exit_code == 0);
    json detection;
    for (const json& r : parse_jsonl(status.out))
        if (r.value("kind", "") == "detection") detection = r;
    INFO(detection.dump());
    CHECK(detection["rules_loaded"] == 2);
    CHECK(detection["rules_refused"] == 1);
    CHECK(detection["refused"][0]["file"] == "broken.yml");
    for (const json& r : detection["rules"]) {
        const int64_t matches = r["matches"].get<int64_t>();
        if (r["id"] == rule_id)
            CHECK((matches >= 2 && matches <= 5));
        else
            CHECK(matches == 1);
    }
    CHECK(detection["evaluated"].get<int64_t>() >= 3);
    // eventctl rules list: the same, as a table.
    const RunResult listed =
        run_command({env.eventctl(), "rules", "list", "--socket", env.socket()}, std::chrono::seconds(10));
    INFO(listed.out << listed.err);
    CHECK(listed.exit_code == 0);
    CHECK_THAT(listed.out, Catch::Contains("low           " + second_id + " true_second.yml  A second marked run"));
    CHECK_THAT(listed.out, Catch::Contains("refused  broken.yml  no id"));
    CHECK_THAT(listed.out, Catch::Contains("2 rule(s) loaded, 1 refused;"));

    // Alerts are eventd's own records: a user the policy gives no alert.* reads none.
    const RunResult as_nobody = env.query("EVENTS alert.* COUNT", lookup_user("nobody"));
    CHECK((as_nobody.exit_code != 0 || parse_jsonl(as_nobody.out).at(0)["count"] == 0));
}

}  // namespace eventd::query_it

namespace eventd::query_it {

TEST_CASE("detection: no detector without rules; the first rules, brought by a reload, start it", "[audit-access]") {
    kmes::it::KernelAuditState before;
    const std::string key = "kmes-detect-reload-" + std::to_string(getpid());
    test_support::TempDir files;
    std::ofstream(files / "audit.rules") << "-a always,exit -F arch=b64 -S execve -F exe=/usr/bin/true -k " << key
                                         << "\n";
    const std::string rules_dir = files / "rules.d";
    std::filesystem::create_directories(rules_dir);
    EnvOptions options = fast_commits({{"DetectionRulesPath", rules_dir}});
    options.kmes_config = {{"Audit", {{"Mode", "daemon"}, {"RulesFile", files / "audit.rules"}}}};
    QueryEnv env(options);
    REQUIRE(env.shim().wait_log("audit: daemon mode", std::chrono::seconds(10)));
    REQUIRE(env.eventd().wait_log("detection: 0 rule(s) in", std::chrono::seconds(10)));
    auto detection_records = [&] {
        const RunResult status = env.query("STATUS");
        REQUIRE(status.exit_code == 0);
        size_t n = 0;
        for (const json& r : parse_jsonl(status.out)) n += r.value("kind", "") == "detection";
        return n;
    };
    CHECK(detection_records() == 0);  // no detector, no reader of the shards
    run_true(key + "-before");        // before any rule: never evaluated
    const std::string stored_before = "EVENTS audit.syscall WHERE key == \"" + key + "\" COUNT";
    REQUIRE(test_support::eventually(  // committed before the detector takes the store's end
        [&] { return parse_jsonl(env.query(stored_before).out).at(0)["count"].get<int64_t>() == 1; },
        std::chrono::seconds(20)));

    const std::string rule_id = "7a1e3b2c-0d4f-4e5a-9b6c-" + std::to_string(100000000000 + getpid());
    std::ofstream(rules_dir + "/marker.yml")
        << "title: Marker\nid: " << rule_id << "\nlevel: critical\nlogsource: {product: linux, service: auditd}\n"
        << "detection:\n    selection:\n        a1|startswith: '" << key << "'\n    condition: selection\n";
    env.eventd().signal(SIGHUP);
    REQUIRE(env.eventd().wait_log("evaluating audit events from now on (first start)", std::chrono::seconds(10)));
    run_true(key + "-after");
    REQUIRE(test_support::eventually([&] { return alerts_of(env, rule_id).size() >= 1; }, std::chrono::seconds(20)));
    const std::vector<json> alerts = alerts_of(env, rule_id);
    REQUIRE(alerts.size() == 1);
    CHECK(alerts[0]["event_type"] == "alert.critical");
    CHECK(alerts[0]["fields"]["a1"] == json::array({key + "-after"}));
    CHECK(detection_records() == 1);
}

}  // namespace eventd::query_it
