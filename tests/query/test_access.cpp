// [access]: the access matrix with real users (tests/query/access/*.test, run as root,
// eventd-adm, eventd-auditor and nobody through setpriv), a policy without "*" (fail closed: no
// one but root reads anything), a SIGHUP reload of the policy taking effect, and the `self`
// principal: events emitted by real users, each of whom reads only their own.
#include <grp.h>

#include <chrono>
#include <cstdlib>

#include <catch2/catch.hpp>

#include "case_runner.hpp"
#include "support/eventually.hpp"
#include "support/local_users.hpp"
#include "support/query_env.hpp"
#include "support/stream_helpers.hpp"

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
    int64_t n = 0;
    test_support::eventually([&] { return (n = count_as(env, query, user)) == expected; }, std::chrono::seconds(5),
                             std::chrono::milliseconds(100));
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

// Issue 39 (ACCESS-CONTROL.md "Names that do not resolve"): a deny of a user who does not exist
// yet denies everyone on that pattern — also once the user is created, until a reload resolves
// the name; then only that user. STATUS names the entry failing closed meanwhile. (A failing
// lookup: eventd_logic's EMFILE case.)
TEST_CASE("a deny naming an unknown user denies everyone until a reload resolves it, then only that user",
          "[access]") {
    ensure_test_users();
    TemporaryUser late("eventd-late");  // does not exist now; removed at the end
    json policy = {{"Events",
                    {{"*", json::array({{{"allow", {"group:adm"}}}})},
                     {"kacs", json::array({{{"deny", {"user:" + late.name()}}}, {{"allow", {"everyone"}}}})}}}};
    QueryEnv env(EnvOptions{.eventd = {{"Security", policy}}});
    CHECK_THAT(env.eventd().log(), Catch::Contains("unknown user '" + late.name() + "'") &&
                                       Catch::Contains("denies everyone (fail closed)"));
    const auto before = status_of<protocol::status::AccessPolicy>(env);
    CHECK_FALSE(before.refused);
    CHECK(before.deny_failing_closed == 1);
    CHECK(before.failing_closed == "Security.Events pattern 'kacs', entry 1 (user:" + late.name() + ")");
    CHECK(count_as(env, "EVENTS kacs.* COUNT", nullptr) == 12);  // root reads everything
    CHECK(count_as(env, "EVENTS kacs.* COUNT", "nobody") == 0);
    CHECK(count_as(env, "EVENTS kacs.* COUNT", "eventd-adm") == 0);
    CHECK(count_as(env, "EVENTS app.login COUNT", "eventd-adm") == 10);  // other patterns as before

    late.create();
    CHECK(count_as(env, "EVENTS kacs.* COUNT", late.name().c_str()) == 0);  // created after the load: still denied

    policy["Events"]["lcs"] = json::array({{{"allow", {"group:adm"}}}});  // a change, so the reload is seen
    env.reload({{"Security", policy}}, "Security");
    CHECK(await_count(env, "EVENTS kacs.* COUNT", "nobody", 12) == 12);
    CHECK(count_as(env, "EVENTS kacs.* COUNT", "eventd-adm") == 12);
    CHECK(count_as(env, "EVENTS kacs.* COUNT", late.name().c_str()) == 0);
    const auto after = status_of<protocol::status::AccessPolicy>(env);
    CHECK(after.deny_failing_closed == 0);
    CHECK_FALSE(after.failing_closed);
    CHECK(after.loaded_ns > before.loaded_ns);
}

// A policy eventd refuses leaves only root reading (DESIGN.md §3.6), and STATUS says so and why —
// not only the log of the load.
TEST_CASE("a refused policy: only root reads, and STATUS says why", "[access]") {
    ensure_test_users();
    const json refused = {{"Events",
                           {{"*", json::array({{{"allow", {"everyone"}}}})},
                            {"kacs", json::array({{{"deny", {"uid:1"}}, {"fields", {"timestamp"}}}})}}}};
    QueryEnv env(EnvOptions{.eventd = {{"Security", refused}}});
    CHECK(count_as(env, "EVENTS kacs.* COUNT", nullptr) == 12);
    CHECK(count_as(env, "EVENTS kacs.* COUNT", "eventd-adm") == 0);
    CHECK(count_as(env, "EVENTS app.login COUNT", "eventd-adm") == 0);
    const auto status = status_of<protocol::status::AccessPolicy>(env);
    CHECK(status.refused);
    CHECK_THAT(status.problem.value_or(""), Catch::Contains("\"fields\" is only valid on allow entries"));
    CHECK(status.patterns == 0);
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

// ---- the `self` principal (issue 24 item 4) ------------------------------------------------

// docs/ACCESS-CONTROL.md §5.1's example on a type of its own: administrators read everything;
// every user reads four fields of the events their own processes emitted.
const json kSelfPolicy = {{"Events",
                           {{"*", json::array({{{"allow", {"group:adm"}}}})},
                            {"selfie", json::array({{{"allow", {"group:adm"}}},
                                                    {{"allow", {"self"}},
                                                     {"fields", {"timestamp", "event_type", "who", "n"}}}})}}}};

std::string kmes_emit_path() {
    const char* path = std::getenv("KMES_EMIT");
    if (!path || !*path) throw std::runtime_error("KMES_EMIT is not set: run the tests through `meson test`");
    return path;
}

// kmes-emit one event as `user` (root when empty). Emitting needs the shim's EmitGroup
// (eventd-auditors here): the process gets it as its real group, whoever the user is.
void emit_as(const std::string& user, const json& payload) {
    std::vector<std::string> argv{kmes_emit_path(), "--type", "selfie.note", "--json", payload.dump()};
    if (!user.empty()) {
        const auto as = lookup_user(user);
        REQUIRE(as);
        const group* emitters = getgrnam("eventd-auditors");
        REQUIRE(emitters);
        argv.insert(argv.begin(), {"/usr/bin/setpriv", "--reuid=" + std::to_string(as->uid),
                                   "--regid=" + std::to_string(emitters->gr_gid), "--clear-groups", "--"});
    }
    const RunResult r = run_command(argv, std::chrono::seconds(10));
    INFO("kmes-emit as " << (user.empty() ? "root" : user) << ": " << r.err);
    REQUIRE(r.exit_code == 0);
}

std::vector<json> records_as(QueryEnv& env, const std::string& query, const char* user) {
    const RunResult r = env.query(query, user ? lookup_user(user) : std::nullopt);
    INFO(query << " as " << (user ? user : "root") << ": " << r.err);
    REQUIRE(r.exit_code == 0);
    return parse_jsonl(r.out);
}

TEST_CASE("self: each user reads the events of their own processes and nothing of anyone else's", "[access]") {
    ensure_test_users();
    const group* emitters = getgrnam("eventd-auditors");
    REQUIRE(emitters);
    EnvOptions options = fast_commits({{"Security", kSelfPolicy}});
    options.kmes_config = {{"EmitGroup", emitters->gr_gid}};
    QueryEnv env(options);
    for (int n = 1; n <= 3; ++n) emit_as("eventd-auditor", {{"who", "auditor"}, {"n", n}, {"secret", "a"}});
    for (int n = 1; n <= 2; ++n) emit_as("nobody", {{"who", "nobody"}, {"n", n}, {"secret", "b"}});
    emit_as("", {{"who", "root"}, {"n", 1}, {"secret", "r"}});
    REQUIRE(test_support::eventually([&] { return count_as(env, "EVENTS selfie.note COUNT", nullptr) == 6; }));

    // Each sees their own records, with the fields granted to self, and counts only those.
    CHECK(count_as(env, "EVENTS selfie.note COUNT", "eventd-auditor") == 3);
    CHECK(count_as(env, "EVENTS selfie.* COUNT", "nobody") == 2);
    CHECK(count_as(env, "EVENTS COUNT", "nobody") == 2);
    const auto mine = records_as(env, "EVENTS selfie.note SORT n", "nobody");
    REQUIRE(mine.size() == 2);
    for (int i = 0; i < 2; ++i) {
        CHECK(mine[i]["who"] == "nobody");
        CHECK(mine[i]["n"] == i + 1);
        CHECK_FALSE(mine[i].contains("secret"));              // not granted to self
        CHECK_FALSE(mine[i].contains("true_token_guid"));     // nor the header tokens
    }
    // Filters see only the caller's own rows: another user's values match nothing.
    CHECK(count_as(env, "EVENTS selfie.note WHERE who == \"auditor\" COUNT", "nobody") == 0);
    CHECK(count_as(env, "EVENTS selfie.note WHERE who == \"nobody\" COUNT", "nobody") == 2);
    CHECK(records_as(env, "EVENTS selfie.note COUNT BY who", "eventd-auditor") ==
          std::vector<json>{{{"who", "auditor"}, {"count", 3}}});
    // A field not granted to self cannot be filtered on.
    const RunResult refused = env.query("EVENTS selfie.note WHERE secret == \"a\" COUNT", lookup_user("nobody"));
    CHECK(refused.exit_code != 0);
    CHECK_THAT(refused.err, Catch::Contains("'secret' cannot be used in WHERE"));
    // Administrators read every record in full; root too.
    CHECK(count_as(env, "EVENTS selfie.note WHERE secret IS NOT NULL COUNT", "eventd-adm") == 6);
    CHECK(count_as(env, "EVENTS selfie.note COUNT", nullptr) == 6);

    // A live stream shows the caller's new records and skips the others'.
    Child stream(env.query_argv("EVENTS selfie.note STREAM TAKE 0", lookup_user("nobody")));
    REQUIRE(test_support::eventually([&] { return status_of<protocol::status::Queries>(env).streaming == 1; }));
    emit_as("eventd-auditor", {{"who", "auditor"}, {"n", 4}, {"secret", "a"}});
    emit_as("nobody", {{"who", "nobody"}, {"n", 3}, {"secret", "b"}});
    emit_as("eventd-auditor", {{"who", "auditor"}, {"n", 5}, {"secret", "a"}});
    emit_as("nobody", {{"who", "nobody"}, {"n", 4}, {"secret", "b"}});  // the end marker
    std::vector<json> seen;
    while (seen.empty() || seen.back()["n"] != 4) {
        const auto line = stream.read_line(std::chrono::seconds(10));
        INFO("stream stderr: " << stream.err_so_far());
        REQUIRE(line);
        seen.push_back(json::parse(*line));
        REQUIRE(seen.size() <= 2);
    }
    REQUIRE(seen.size() == 2);
    for (const json& record : seen) {
        CHECK(record["who"] == "nobody");
        CHECK_FALSE(record.contains("secret"));
    }
    CHECK(seen[0]["n"] == 3);
    REQUIRE(count_as(env, "EVENTS selfie.note COUNT", nullptr) == 10);
    CHECK_FALSE(stream.read_line(std::chrono::milliseconds(300)));
}

}  // namespace
}  // namespace eventd::query_it
