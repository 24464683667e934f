// [leaks]: the four ways through access control of issue 23, each reproduced as the attacker
// did it — real users (setpriv to nobody, eventd-auditor, eventd-adm), a real eventd, real
// streams through eventctl — and each now asserted closed:
//   1. a live stream whose WHERE names a field a reload took away ends with the reason;
//   3. unprivileged users cannot fill the adaptive-index counters nor decide an index alone;
//   4. the store is private on disk whatever the umask eventd started with;
//   5. unprivileged users together cannot take the administrators' query and stream slots.
// (2, query time, is proved structurally in tests/store/visibility_guard_test.cpp and measured
// by bench/access_oracle.sh; 6, sealed cursors, in test_resume.cpp.)
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "support/eventually.hpp"
#include "support/local_users.hpp"
#include "support/query_env.hpp"
#include "support/stream_helpers.hpp"

namespace eventd::query_it {
using protocol::status::IndexPolicy;
using protocol::status::Queries;

namespace {

using nlohmann::json;
using std::chrono::seconds;
using test_support::eventually;
namespace fs = std::filesystem;

// Group eventd-auditors reads `mixed` in full, everything else is for group adm.
json mixed_policy(const json& auditor_fields) {
    json auditors = {{"allow", {"group:eventd-auditors"}}};
    if (!auditor_fields.is_null()) auditors["fields"] = auditor_fields;
    return {{"Events",
             {{"*", json::array({{{"allow", {"group:adm"}}}})},
              {"mixed", json::array({{{"allow", {"group:adm"}}}, auditors})}}}};
}

TEST_CASE("a reload that hides a stream's WHERE field ends the stream; one still allowed goes on with the new fields",
          "[leaks]") {
    ensure_test_users();
    QueryEnv env(fast_commits({{"Security", mixed_policy(nullptr)}}));
    const auto auditor = lookup_user("eventd-auditor");
    // The reproduction: two oracles on the hidden-to-be `secret_field`, one on `public`, and a
    // stream without WHERE.
    Child oracle_a(env.query_argv("EVENTS mixed.* STREAM TAKE 0 WHERE secret_field STARTS_WITH \"a\"", auditor));
    Child oracle_b(env.query_argv("EVENTS mixed.* STREAM TAKE 0 WHERE secret_field STARTS_WITH \"b\"", auditor));
    Child on_public(env.query_argv("EVENTS mixed.* STREAM TAKE 0 WHERE public == 1", auditor));
    Child plain(env.query_argv("EVENTS mixed.* STREAM TAKE 0", auditor));
    REQUIRE(eventually([&] { return status_of<Queries>(env).streaming == 4; }));

    emit("mixed.thing", {{"secret_field", "apple"}, {"public", 1}, {"n", 1}});
    emit("mixed.thing", {{"secret_field", "banana"}, {"public", 1}, {"n", 2}});
    for (Child* c : {&oracle_a, &on_public, &plain}) REQUIRE(c->read_line(seconds(10)).has_value());
    REQUIRE(oracle_b.read_line(seconds(10)).has_value());
    for (Child* c : {&on_public, &plain}) REQUIRE(c->read_line(seconds(10)).has_value());

    // The grant narrows to timestamp, event_type, public: both oracles end at the reload, with
    // the reason, before any other row is read under the new policy.
    env.reload({{"Security", mixed_policy({"timestamp", "event_type", "public"})}}, "Security");
    for (Child* c : {&oracle_a, &oracle_b}) {
        const RunResult end = c->finish(seconds(10));
        INFO("stdout: " << end.out << "; stderr: " << end.err);
        CHECK_FALSE(end.timed_out);
        CHECK(end.exit_code != 0);
        CHECK_THAT(end.err, Catch::Contains("the access policy changed and refuses this query now") &&
                                Catch::Contains("field 'secret_field' cannot be used in WHERE"));
        CHECK(end.out.empty());  // nothing arrived between the reload and the end
    }
    // Streams the new policy allows go on, under it: no secret_field any more.
    emit("mixed.thing", {{"secret_field", "avocado"}, {"public", 1}, {"n", 3}});
    const auto filtered = on_public.read_line(seconds(10));
    REQUIRE(filtered.has_value());
    CHECK(json::parse(*filtered).value("n", 0) == 0);  // n is hidden now
    CHECK_FALSE(json::parse(*filtered).contains("secret_field"));
    const auto plain_line = plain.read_line(seconds(10));
    REQUIRE(plain_line.has_value());
    const json record = json::parse(*plain_line);
    CHECK_FALSE(record.contains("secret_field"));
    CHECK(record.value("public", 0) == 1);

    // `public` goes too: the stream filtering on it ends; the plain one still goes on.
    env.reload({{"Security", mixed_policy({"timestamp", "event_type"})}}, "Security");
    const RunResult end = on_public.finish(seconds(10));
    INFO("stderr: " << end.err);
    CHECK(end.exit_code != 0);
    CHECK_THAT(end.err, Catch::Contains("field 'public' cannot be used in WHERE"));
    emit("mixed.thing", {{"secret_field", "apricot"}, {"public", 1}, {"n", 4}});
    const auto last = plain.read_line(seconds(10));
    REQUIRE(last.has_value());
    CHECK(json::parse(*last).size() == 2);  // timestamp and event_type only
    CHECK(status_of<Queries>(env).streaming == 1);
}

TEST_CASE("unprivileged users cannot fill the adaptive-index counters nor decide an index alone", "[leaks]") {
    ensure_test_users();
    // Index policy every 100 ms; CreateThreshold 10: one unprivileged user counts at most 4.
    setenv("EVENTD_TEST_INDEX_POLICY_INTERVAL_MS", "100", 1);
    const json policy = {{"Events",
                          {{"*", json::array({{{"allow", {"group:adm"}}}})},
                           {"app", json::array({{{"allow", {"group:adm", "everyone"}}}})}}}};
    QueryEnv env(EnvOptions{
        .eventd = {{"Security", policy}, {"AdaptiveIndexCreateThreshold", 10}, {"AdaptiveIndexDropThreshold", 3}}});
    unsetenv("EVENTD_TEST_INDEX_POLICY_INTERVAL_MS");
    const auto nobody = lookup_user("nobody");

    // The flood: 21 queries of 500 invented fields each over a type nobody cannot read...
    for (int q = 0; q < 21; ++q) {
        std::string where;
        for (int f = 0; f < 500; ++f) where += (f ? " OR f" : "f") + std::to_string(q * 500 + f) + " == 1";
        const RunResult r = env.query("EVENTS kacs.none WHERE " + where + " COUNT", nobody);
        INFO(r.err);
        REQUIRE(r.exit_code == 0);
    }
    // ...and over one it can: within its budget of distinct fields only (event_type, for the
    // type pattern, and the first 63 invented ones; event_type again in the next two queries).
    for (int q = 0; q < 3; ++q) {
        std::string where;
        for (int f = 0; f < 500; ++f) where += (f ? " OR g" : "g") + std::to_string(q * 500 + f) + " == 1";
        REQUIRE(env.query("EVENTS app.login WHERE " + where + " COUNT", nobody).exit_code == 0);
    }
    auto status = status_of<IndexPolicy>(env);
    CHECK(status.counted_fields == 64);  // FieldCounter::kMaxFieldsPerUser
    CHECK(status.not_counted == 3 * 501 - 66);
    for (const auto& c : status.counters) CHECK(c.field.rfind("f", 0) != 0);

    // Another user queries `user` 20 times: 4 count. No index on one user's word alone.
    const auto auditor = lookup_user("eventd-auditor");
    for (int q = 0; q < 20; ++q) REQUIRE(env.query("EVENTS WHERE user == \"x\" COUNT", auditor).exit_code == 0);
    // Two policy passes later (the first may have taken the counts before the last query's),
    // the 20 queries have been weighed.
    status = status_of<IndexPolicy>(env);
    for (int pass = 0; pass < 2; ++pass) {
        const auto last = status.last_recompute_ns;
        REQUIRE(eventually([&] { return (status = status_of<IndexPolicy>(env)).last_recompute_ns != last; }));
    }
    CHECK(status.desired.empty());
    // An administrator's queries are counted in full, beside the flood: root adds 6 → 10.
    for (int q = 0; q < 6; ++q) REQUIRE(env.query("EVENTS WHERE user == \"x\" COUNT").exit_code == 0);
    CHECK(eventually([&] { return status_of<IndexPolicy>(env).desired.size() == 1; }));
    CHECK(status_of<IndexPolicy>(env).desired.at(0).field == "user");
}

// Every entry of `dir` (and `dir`) without permission bits for others and without group write.
void check_private(const fs::path& dir) {
    struct stat st {};
    REQUIRE(::stat(dir.c_str(), &st) == 0);
    CHECK((st.st_mode & 0027) == 0);
    for (const auto& entry : fs::directory_iterator(dir)) {
        REQUIRE(::lstat(entry.path().c_str(), &st) == 0);
        INFO(entry.path() << " mode " << std::oct << (st.st_mode & 07777));
        CHECK((st.st_mode & 0027) == 0);
    }
}

TEST_CASE("the store is private whatever the umask: new files and an existing readable store", "[leaks]") {
    ensure_test_users();
    const auto nobody = lookup_user("nobody");
    for (const mode_t mask : {mode_t{022}, mode_t{000}}) {
        INFO("umask " << std::oct << mask);
        // The fixture store is written under this umask too (0644 or 0666 files): eventd finds
        // an existing store readable by others, tightens it and says so.
        const mode_t old = ::umask(mask);
        EnvOptions options = fast_commits();
        // Readable by others, not writable: as root eventd refuses a store directory others can
        // write (store_privacy.hpp, refuse_shared_store_directory), which umask 000 would make.
        options.before_eventd = [](const std::string& store) { REQUIRE(::chmod(store.c_str(), 0755) == 0); };
        QueryEnv env(options);
        for (int i = 0; i < 50; ++i) emit("secret.bulk", {{"pin", 1234}});
        REQUIRE(await_count(env, "EVENTS secret.bulk COUNT", 50, seconds(20)) == 50);
        ::umask(old);
        CHECK(env.eventd().log().find("store file was accessible to other users, made private") != std::string::npos);
        const fs::path store = env.store();
        CHECK(fs::exists(store / "shard-0000.db-wal"));
        check_private(store);
        // As nobody: the directory itself cannot be entered, let alone a shard or its -wal.
        // (The test directory above it is 0755, as an administrator's would be.)
        for (const char* name : {"shard-0000.db", "shard-0000.db-wal", "eventd-meta.db", "cursor.key"}) {
            const RunResult r = run_command(command_as(nobody, {"/bin/cat", (store / name).string()}), seconds(10));
            INFO(name << ": " << r.err);
            CHECK(r.exit_code != 0);
            CHECK_THAT(r.err, Catch::Contains("Permission denied"));
        }
        const RunResult ls = run_command(command_as(nobody, {"/bin/ls", store.string()}), seconds(10));
        CHECK(ls.exit_code != 0);
        // A restart finds nothing to tighten.
        env.stop_eventd();
        env.start_eventd();
        CHECK(env.eventd().log().find("made private") == std::string::npos);
        check_private(store);
    }
}

TEST_CASE("unprivileged users together cannot take the administrators' slots; streams per user are limited",
          "[leaks]") {
    ensure_test_users();
    // Unprivileged callers together: 6 - 2 = 4 connections, 4 - 2 = 2 streams.
    QueryEnv env(EnvOptions{.eventd = {{"MaxConcurrentQueries", 6},
                                       {"MaxStreamingQueries", 4},
                                       {"AdminReservedQueries", 2},
                                       {"MaxStreamingQueriesPerUser", 2}}});
    const auto nobody = lookup_user("nobody");
    const auto auditor = lookup_user("eventd-auditor");
    // nobody: two streams; a third is over its own limit.
    Child first(env.query_argv("EVENTS app.login STREAM TAKE 0", nobody));
    Child second(env.query_argv("EVENTS app.login STREAM TAKE 0", nobody));
    REQUIRE(eventually([&] { return status_of<Queries>(env).streaming == 2; }));
    const RunResult third = env.query("EVENTS app.login STREAM TAKE 0", nobody);
    CHECK(third.exit_code != 0);
    CHECK_THAT(third.err, Catch::Contains("too many concurrent streaming queries from this user"));
    // Another unprivileged user: the remaining stream slots are the administrators'.
    const RunResult other = env.query("EVENTS app.login STREAM TAKE 0", auditor);
    CHECK(other.exit_code != 0);
    CHECK_THAT(other.err, Catch::EndsWith("too many concurrent streaming queries\n"));
    // Root and an administrator (group adm) stream in them.
    Child root_stream(env.query_argv("EVENTS app.login STREAM TAKE 0"));
    Child adm_stream(env.query_argv("EVENTS app.login STREAM TAKE 0", lookup_user("eventd-adm")));
    REQUIRE(eventually([&] { return status_of<Queries>(env).streaming == 4; }));
    // Four connections are open: no unprivileged one fits any more, an administrator's does.
    const RunResult refused = env.query("EVENTS app.login COUNT", auditor);
    CHECK(refused.exit_code != 0);
    CHECK_THAT(refused.err, Catch::EndsWith("too many concurrent queries\n"));
    CHECK(env.query("EVENTS app.login COUNT").exit_code == 0);
    const RunResult adm = env.query("EVENTS app.login COUNT", lookup_user("eventd-adm"));
    INFO(adm.err);
    CHECK(adm.exit_code == 0);
    const auto queries = status_of<Queries>(env);
    CHECK(queries.refused_streaming_per_user == 1);
    CHECK(queries.refused_streaming == 1);
    CHECK(queries.refused_concurrency == 1);
    CHECK(queries.admin_reserved_queries == 2);
    CHECK(queries.max_streaming_queries_per_user == 2);
}

}  // namespace
}  // namespace eventd::query_it
