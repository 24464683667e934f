// [access]: the access matrix with real users (tests/query/access/*.test, run as root,
// eventd-adm, eventd-auditor and nobody through setpriv), a policy without "*" (fail closed: no
// one but root reads anything), and a SIGHUP reload of the policy taking effect.
#include <chrono>
#include <cstdlib>
#include <thread>

#include <catch2/catch.hpp>

#include "case_runner.hpp"
#include "local_users.hpp"
#include "query_env.hpp"

namespace eventd::query_it {
namespace {

using nlohmann::json;

const json kAuditorPolicy = {{"Events",
                              {{"*", json::array({{{"allow", {"group:adm"}}}})},
                               {"app.login", json::array({{{"allow", {"group:adm"}}},
                                                          {{"allow", {"group:eventd-auditors"}},
                                                           {"fields", {"timestamp", "event_type", "user"}}}})}}}};

std::string access_dir() {
    const char* path = std::getenv("QUERY_ACCESS_DIR");
    if (!path || !*path) throw std::runtime_error("QUERY_ACCESS_DIR is not set: run the tests through `meson test`");
    return path;
}

// The one record of a COUNT, or -1 when the query failed (stderr in the Catch2 message).
int64_t count_as(QueryEnv& env, const std::string& query, const char* user) {
    std::optional<RunAs> as;
    if (user) as = lookup_user(user);
    const RunResult r = env.query(query, as);
    INFO(query << " as " << (user ? user : "root") << ": exit " << r.exit_code << ", stderr " << r.err << ", stdout "
               << r.out);
    if (r.exit_code != 0) return -1;
    const auto records = parse_jsonl(r.out);
    if (records.size() != 1 || !records[0].contains("count")) return -2;
    return records[0]["count"].get<int64_t>();
}

// Poll until `query` as `user` counts `expected` (a reload is asynchronous); the last count.
int64_t await_count(QueryEnv& env, const std::string& query, const char* user, int64_t expected) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    int64_t n = count_as(env, query, user);
    while (n != expected && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        n = count_as(env, query, user);
    }
    return n;
}

TEST_CASE("each user sees exactly its records and fields; forbidden fields are rejected", "[access]") {
    ensure_test_users();
    QueryEnv env(EnvOptions{.eventd = {{"Security", kAuditorPolicy}}});
    run_case_dir(env, access_dir());
}

TEST_CASE("a policy without \"*\" denies everyone but root", "[access]") {
    ensure_test_users();
    const json no_default = {{"Events", {{"app.login", json::array({{{"allow", {"group:adm", "everyone"}}}})}}}};
    QueryEnv env(EnvOptions{.eventd = {{"Security", no_default}}});
    CHECK(count_as(env, "EVENTS app.login COUNT", nullptr) == 10);
    CHECK(count_as(env, "EVENTS kacs.access_denied COUNT", nullptr) == 7);
    // Types no pattern covers: root only (both readings of §9.1.7 agree).
    CHECK(count_as(env, "EVENTS kacs.access_denied COUNT", "eventd-adm") == 0);
    CHECK(count_as(env, "EVENTS WHERE event_type != \"app.login\" COUNT", "eventd-adm") == 0);
    // The whole policy is void without "*" (policy.hpp: "No \"*\" pattern → no access for
    // anyone else"; issue 4: "no `*` entry → no events for anyone but root").
    CHECK(count_as(env, "EVENTS app.login COUNT", "eventd-adm") == 0);
    CHECK(count_as(env, "EVENTS COUNT", "eventd-adm") == 0);
    CHECK(count_as(env, "EVENTS app.login COUNT", "eventd-auditor") == 0);
    CHECK(count_as(env, "EVENTS app.login COUNT", "nobody") == 0);
}

TEST_CASE("the default policy (no Security key) lets root and group adm read everything", "[access]") {
    ensure_test_users();
    QueryEnv env;
    CHECK(count_as(env, "EVENTS kacs.access_denied COUNT", nullptr) == 7);
    CHECK(count_as(env, "EVENTS kacs.access_denied COUNT", "eventd-adm") == 7);
    CHECK(count_as(env, "EVENTS kacs.access_denied COUNT", "eventd-auditor") == 0);
    CHECK(count_as(env, "EVENTS kacs.access_denied COUNT", "nobody") == 0);
}

TEST_CASE("SIGHUP reloads the policy and later queries follow it", "[access]") {
    ensure_test_users();
    QueryEnv env(EnvOptions{.eventd = {{"Security", kAuditorPolicy}}});
    REQUIRE(count_as(env, "EVENTS kacs.access_denied COUNT", "eventd-auditor") == 0);
    REQUIRE(count_as(env, "EVENTS app.login COUNT", "nobody") == 0);

    json wider = kAuditorPolicy;
    wider["Events"]["kacs"] = json::array({{{"allow", {"group:eventd-auditors"}}}});
    wider["Events"]["app.login"].push_back({{"allow", {"user:nobody"}}, {"fields", {"event_type"}}});
    env.reload({{"Security", wider}}, "Security");
    CHECK(await_count(env, "EVENTS kacs.access_denied COUNT", "eventd-auditor", 7) == 7);
    CHECK(await_count(env, "EVENTS kacs.* COUNT", "eventd-auditor", 12) == 12);
    CHECK(await_count(env, "EVENTS app.login COUNT", "nobody", 10) == 10);
    {
        const RunResult r = env.query("EVENTS app.login SORT event_type TAKE 1", lookup_user("nobody"));
        INFO(r.err);
        REQUIRE(r.exit_code == 0);
        const auto records = parse_jsonl(r.out);
        REQUIRE(records.size() == 1);
        CHECK(records[0] == json({{"event_type", "app.login"}}));
    }

    // And back: the grant is gone again.
    env.reload({{"Security", kAuditorPolicy}}, "Security");
    CHECK(await_count(env, "EVENTS kacs.access_denied COUNT", "eventd-auditor", 0) == 0);
    CHECK(await_count(env, "EVENTS app.login COUNT", "nobody", 0) == 0);
}

TEST_CASE("STATUS is for administrators only", "[access]") {
    ensure_test_users();
    QueryEnv env;
    const RunResult root = env.query("STATUS");
    INFO(root.err);
    CHECK(root.exit_code == 0);
    const RunResult adm = env.query("STATUS", lookup_user("eventd-adm"));
    INFO(adm.err);
    CHECK(adm.exit_code == 0);
    const RunResult nobody = env.query("STATUS", lookup_user("nobody"));
    CHECK(nobody.exit_code == 1);
    CHECK(nobody.out.empty());
    CHECK(!nobody.err.empty());
}

}  // namespace
}  // namespace eventd::query_it
