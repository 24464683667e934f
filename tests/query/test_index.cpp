// [index]: the policy half of adaptive indexing with a real eventd (PSD-008 §3.3.2, §3.3.8,
// §3.3.9, §8.2.7, §8.6.5): eventd-meta.db as created, counted queries admitting a field and a
// quiet window dropping it, EVENTS INDEX for root, a member of group adm and (refused) nobody,
// admin_sd changed with sqlite3 + SIGHUP, persistence across a restart, and a corrupt meta
// database set aside while the shards and ingestion carry on. The policy interval and window
// are shortened with the test-only EVENTD_TEST_INDEX_* variables (eventd/test_hooks.hpp).
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include <catch2/catch.hpp>

#include "plan_explain.hpp"
#include "kmes/kmes.h"
#include "store/shard_db.hpp"
#include "support/eventually.hpp"
#include "support/local_users.hpp"
#include "support/query_env.hpp"
#include "support/rows.hpp"
#include "support/stream_helpers.hpp"

namespace eventd::query_it {
namespace {

using nlohmann::json;
using test_support::eventually;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

// Set test-only variables for the eventd processes this test starts (they inherit them).
class ScopedEnv {
public:
    ScopedEnv(std::vector<std::pair<std::string, std::string>> vars) : vars_(std::move(vars)) {
        for (const auto& [k, v] : vars_) ::setenv(k.c_str(), v.c_str(), 1);
    }
    ~ScopedEnv() {
        for (const auto& [k, v] : vars_) ::unsetenv(k.c_str());
    }

private:
    std::vector<std::pair<std::string, std::string>> vars_;
};

// Rows of `sql` on eventd-meta.db, each row's columns joined with '|' (read-only connection;
// WAL lets it read while eventd writes).
std::vector<std::string> rows(const fs::path& db, const std::string& sql) {
    sqlite3* raw = nullptr;
    REQUIRE(sqlite3_open_v2(db.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
    sqlite3_busy_timeout(raw, 2000);
    sqlite3_stmt* stmt = nullptr;
    const int rc = sqlite3_prepare_v2(raw, sql.c_str(), -1, &stmt, nullptr);
    INFO(sql << ": " << sqlite3_errmsg(raw));
    REQUIRE(rc == SQLITE_OK);
    std::vector<std::string> out;
    while (sqlite3_step(stmt) == SQLITE_ROW) {
        std::string row;
        for (int i = 0; i < sqlite3_column_count(stmt); ++i) {
            const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(stmt, i));
            row += (i ? "|" : "") + std::string(t ? t : "NULL");
        }
        out.push_back(row);
    }
    sqlite3_finalize(stmt);
    sqlite3_close(raw);
    return out;
}

void write_sql(const fs::path& db, const std::string& sql) {
    sqlite3* raw = nullptr;
    REQUIRE(sqlite3_open_v2(db.c_str(), &raw, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK);
    sqlite3_busy_timeout(raw, 2000);
    const int rc = sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, nullptr);
    INFO(sql << ": " << sqlite3_errmsg(raw));
    sqlite3_close(raw);
    REQUIRE(rc == SQLITE_OK);
}

std::vector<std::string> desired(QueryEnv& env) {
    return rows(fs::path(env.store()) / "eventd-meta.db",
                "SELECT field_path, priority, is_expression FROM desired_indexes ORDER BY priority");
}

protocol::status::IndexPolicy index_status(QueryEnv& env) { return status_of<protocol::status::IndexPolicy>(env); }

RunResult index_as(QueryEnv& env, const std::string& field, const char* user) {
    std::optional<RunAs> as;
    if (user) as = lookup_user(user);
    return env.query("EVENTS INDEX " + field, as);
}

int64_t required_count(QueryEnv& env, const std::string& query) {
    const RunResult r = env.query(query);
    INFO(query << ": " << r.err);
    REQUIRE(r.exit_code == 0);
    const auto records = parse_jsonl(r.out);
    REQUIRE(records.size() == 1);
    return records[0]["count"].get<int64_t>();
}

// Names in `dir` starting with `prefix` (and ending with `suffix`).
std::set<std::string> files_named(const std::string& dir, const std::string& prefix, const std::string& suffix = "") {
    std::set<std::string> out;
    for (const auto& e : fs::directory_iterator(dir)) {
        const std::string name = e.path().filename().string();
        if (name.rfind(prefix, 0) == 0 && name.size() >= suffix.size() &&
            name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
            out.insert(name);
    }
    return out;
}

// The secondary indexes of one shard file, from its schema.
std::vector<std::string> shard_indexes(QueryEnv& env, const std::string& file) {
    return rows(fs::path(env.store()) / file,
                "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'events' AND name != "
                "'idx_events_timestamp' "
                "ORDER BY name");
}

TEST_CASE("eventd-meta.db: created at first start; counted queries admit a field, a quiet window drops it", "[index]") {
    // Policy every 100 ms, windows of 3 s: a whole enter/leave cycle within seconds.
    ScopedEnv vars({{"EVENTD_TEST_INDEX_POLICY_INTERVAL_MS", "100"}, {"EVENTD_TEST_INDEX_WINDOW_MS", "3000"}});
    QueryEnv env(EnvOptions{.eventd = {{"AdaptiveIndexCreateThreshold", 10}, {"AdaptiveIndexDropThreshold", 5}}});
    const fs::path meta = fs::path(env.store()) / "eventd-meta.db";

    // §3.3.9: schema, pragmas, mode, owner, rows.
    struct stat st {};
    REQUIRE(::stat(meta.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    CHECK(st.st_uid == ::geteuid());
    CHECK(rows(meta, "PRAGMA journal_mode") == std::vector<std::string>{"wal"});
    CHECK(rows(meta, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name") ==
          std::vector<std::string>{"desired_indexes", "index_counters", "meta"});
    const auto meta_rows = rows(meta, "SELECT key, value FROM meta ORDER BY key");
    REQUIRE(meta_rows.size() == 3);
    CHECK(meta_rows[0] == "admin_sd|[\"group:adm\"]");
    CHECK_THAT(meta_rows[1], Catch::Matches(R"(created_at\|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)"));
    CHECK(meta_rows[2] == "schema_version|1");
    CHECK(desired(env).empty());
    // The meta database is not a shard: the fixture's counts are unchanged by it.
    CHECK(required_count(env, "EVENTS app.login COUNT") == 10);

    // §8.6.5: ten queries filtering on `user` (plain, aggregate) → at the create threshold
    // within the window. One refused by access control for nobody is not counted (issue 23:
    // only fields of readable types count), so it comes on top and changes nothing.
    const int64_t alice = required_count(env, "EVENTS WHERE user == \"alice\" COUNT");  // without an index
    CHECK(alice == 5);
    for (int i = 0; i < 7; ++i) REQUIRE(env.query("EVENTS WHERE user == \"alice\" COUNT").exit_code == 0);
    REQUIRE(env.query("EVENTS app.login WHERE user == \"bob\" TAKE 1").exit_code == 0);
    REQUIRE(env.query("EVENTS app.login WHERE user == \"bob\" TAKE 1").exit_code == 0);
    ensure_test_users();
    env.query("EVENTS app.login WHERE user == \"bob\" TAKE 1", lookup_user("nobody"));
    CHECK(eventually([&] { return desired(env) == std::vector<std::string>{"user|0|1"}; }));
    const auto status = index_status(env);
    REQUIRE(status.desired.size() == 1);
    CHECK(status.desired[0].field == "user");
    CHECK(status.desired[0].priority == 0);
    CHECK(status.desired[0].is_expression);
    CHECK_FALSE(status.desired[0].manual);
    CHECK(status.last_recompute_ns.has_value());
    bool counted = false;
    for (const auto& c : status.counters)
        if (c.field == "user") counted = c.query_count == 10;  // nobody's not among them
    CHECK(counted);
    CHECK(rows(meta, "SELECT field_path FROM index_counters WHERE field_path = 'user'") ==
          std::vector<std::string>{"user"});

    // §3.3.3: every active shard converges in a quiet period, under the §3.3.7 name; the
    // historical shard (shard-0002, never written) does not. The planner's SQL uses it.
    const std::vector<std::string> built = {"idx_events_payload_user"};
    CHECK(eventually(
        [&] { return shard_indexes(env, "shard-0000.db") == built && shard_indexes(env, "shard-0001.db") == built; }));
    CHECK(shard_indexes(env, "shard-0002.db").empty());
    CHECK_THAT(explain_query(fs::path(env.store()) / "shard-0001.db", "EVENTS WHERE user == \"alice\" TAKE 100"),
               Catch::Contains("USING INDEX idx_events_payload_user (<expr>=?)"));
    CHECK(required_count(env, "EVENTS WHERE user == \"alice\" COUNT") == alice);  // the same answer through the index

    // §3.3.8: the next windows hold fewer than 5 queries on user → it leaves at a window's end.
    for (int i = 0; i < 2; ++i) REQUIRE(env.query("EVENTS WHERE user == \"alice\" COUNT").exit_code == 0);
    CHECK(eventually([&] { return desired(env).empty(); }));
    CHECK(index_status(env).desired.empty());
    // … and the writers drop it.
    CHECK(eventually(
        [&] { return shard_indexes(env, "shard-0000.db").empty() && shard_indexes(env, "shard-0001.db").empty(); }));
}

TEST_CASE(
    "EVENTS INDEX: root and group adm may, nobody may not; admin_sd changes with SIGHUP; a restart keeps "
    "the set and the counters",
    "[index]") {
    ensure_test_users();
    QueryEnv env;
    const fs::path meta = fs::path(env.store()) / "eventd-meta.db";

    // {status:"end"} only after the set is persisted: the rows are there at once.
    RunResult r = index_as(env, "source.name", nullptr);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.empty());
    CHECK(desired(env) == std::vector<std::string>{"source.name|0|1"});
    r = index_as(env, "event_type", "eventd-adm");  // adm is a supplementary group of eventd-adm
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(desired(env) == std::vector<std::string>{"event_type|0|0", "source.name|1|1"});
    r = index_as(env, "cpu_id", "nobody");
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("INDEX needs administrator rights"));
    r = index_as(env, "timestamp", nullptr);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("timestamp is always indexed"));
    CHECK(desired(env) == std::vector<std::string>{"event_type|0|0", "source.name|1|1"});

    // Counters live in memory between passes; shutdown saves them.
    for (int i = 0; i < 3; ++i) REQUIRE(env.query("EVENTS WHERE host == \"a\" COUNT").exit_code == 0);
    env.stop_eventd();
    CHECK(rows(meta, "SELECT query_count FROM index_counters WHERE field_path = 'host'") ==
          std::vector<std::string>{"3"});
    env.start_eventd();
    CHECK(desired(env) == std::vector<std::string>{"event_type|0|0", "source.name|1|1"});
    const auto status = index_status(env);
    CHECK(status.desired.size() == 2);
    CHECK(status.desired.at(0).field == "event_type");
    CHECK(rows(meta, "SELECT query_count FROM index_counters WHERE field_path = 'host'") ==
          std::vector<std::string>{"3"});

    // §12.1: the thresholds are tuning keys — applied on reload and recorded.
    env.reload({{"AdaptiveIndexCreateThreshold", 20}, {"AdaptiveIndexDropThreshold", 5}},
               "AdaptiveIndexCreateThreshold");
    CHECK(eventually([&] {
        const auto s = index_status(env);
        return s.create_threshold == 20 && s.drop_threshold == 5;
    }));
    CHECK(eventually([&] {
        return required_count(env,
                              "EVENTS synthetic.config_change WHERE key == \"AdaptiveIndexDropThreshold\" COUNT") == 1;
    }));

    // admin_sd: an operator's UPDATE and SIGHUP.
    write_sql(meta, R"(UPDATE meta SET value = '["user:nobody"]' WHERE key = 'admin_sd')");
    env.eventd().signal(SIGHUP);
    CHECK(eventually([&] { return index_as(env, "cpu_id", "nobody").exit_code == 0; }));
    CHECK(index_as(env, "origin_class", "eventd-adm").exit_code == 1);  // adm is no longer listed
    CHECK(desired(env).front() == "cpu_id|0|0");
    // An invalid admin_sd: logged, the default (group adm) applies.
    write_sql(meta, R"(UPDATE meta SET value = 'group:adm' WHERE key = 'admin_sd')");
    env.eventd().signal(SIGHUP);
    CHECK(eventually([&] { return index_as(env, "origin_class", "eventd-adm").exit_code == 0; }));
    CHECK_THAT(env.eventd().log(), Catch::Contains("admin_sd: not JSON"));
}

// Issue 40: what a caller triggers is logged within a budget of its own — nobody's flood of
// refused requests leaves ten lines and a count, and another user's line still gets through.
TEST_CASE("EVENTS INDEX refused 30 times for nobody: ten log lines, another user's refusal still logged", "[index]") {
    ensure_test_users();
    QueryEnv env;
    for (int i = 0; i < 30; ++i) REQUIRE(index_as(env, "f" + std::to_string(i), "nobody").exit_code == 1);
    REQUIRE(index_as(env, "g0", "eventd-auditor").exit_code == 1);
    const std::string log = env.eventd().log();
    INFO(log);
    size_t nobody_lines = 0;
    for (size_t at = log.find("refused for nobody"); at != std::string::npos; at = log.find("refused for nobody", at + 1))
        ++nobody_lines;
    CHECK(nobody_lines == 10);
    CHECK_THAT(log, Catch::Contains("EVENTS INDEX g0 refused for eventd-auditor: not an administrator"));
}

TEST_CASE("a corrupt or unknown-version eventd-meta.db is set aside and recreated; shards and ingestion carry on",
          "[index]") {
    QueryEnv env;
    const fs::path meta = fs::path(env.store()) / "eventd-meta.db";
    REQUIRE(index_as(env, "user", nullptr).exit_code == 0);
    const auto shards = files_named(env.store(), "shard-", ".db");
    const int64_t logins = required_count(env, "EVENTS app.login COUNT");
    // Counted in the files once eventd has stopped: a count through the running eventd could
    // miss its own startup record, which commits after READY (under load it did: the restart
    // then seemed to add two).
    int64_t startups = 0;
    auto stored_startups = [&] {
        int64_t n = 0;
        for (const std::string& file : files_named(env.store(), "shard-", ".db"))
            n += std::stoll(rows(fs::path(env.store()) / file,
                                 "SELECT COUNT(*) FROM events WHERE event_type = 'synthetic.startup'")
                                .at(0));
        return n;
    };

    SECTION("garbage bytes") {
        env.stop_eventd();
        startups = stored_startups();
        std::ofstream(meta, std::ios::trunc) << std::string(4096, '\x5a');
    }
    SECTION("schema_version 99") {
        env.stop_eventd();
        startups = stored_startups();
        write_sql(meta, "UPDATE meta SET value = '99' WHERE key = 'schema_version'");
    }
    REQUIRE(startups > 0);
    env.start_eventd();
    CHECK(files_named(env.store(), "eventd-meta.db.corrupt-", "").size() == 1);
    CHECK(rows(meta, "SELECT value FROM meta WHERE key = 'schema_version'") == std::vector<std::string>{"1"});
    CHECK(desired(env).empty());
    CHECK_THAT(env.eventd().log(), Catch::Contains("is unusable"));
    // The shards are the same files, their rows intact, and the new startup record got written.
    auto now_shards = files_named(env.store(), "shard-", ".db");
    CHECK(now_shards == shards);
    CHECK(required_count(env, "EVENTS app.login COUNT") == logins);
    CHECK(eventually([&] { return required_count(env, "EVENTS synthetic.startup COUNT") == startups + 1; }));
}

// `events` written into shard 0 as one transaction of the audit source's rows: ring 0, origin
// class audit, sequences 1.., a boot of their own, times within the last second.
void add_audit_rows(const std::string& store_dir, const std::vector<std::pair<std::string, json>>& events) {
    auto opened = eventd::store::ShardDb::open(store_dir, 0);
    REQUIRE(opened);
    auto& db = *opened;
    REQUIRE(db->begin());
    const uint64_t now = uint64_t(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count());
    for (size_t i = 0; i < events.size(); ++i) {
        REQUIRE(db->insert(test_support::event_row({.boot = test_support::guid(0xad),
                                                    .timestamp = now - (events.size() - i) * 1000,
                                                    .cpu = 0,
                                                    .sequence = i + 1,
                                                    .origin_class = KMES_ORIGIN_AUDIT,
                                                    .type = events[i].first,
                                                    .payload = json::to_msgpack(events[i].second)})));
    }
    REQUIRE(db->commit());
}

// docs/AUDIT.md "From ausearch to EVENTS": each equivalent answers like ausearch would, and
// on the indexes adaptive indexing builds for its fields (here asked for with EVENTS INDEX, as
// an administrator would, or as a few hundred such queries would make the policy do).
TEST_CASE("the ausearch equivalents answer right and use the indexes built for their fields", "[index]") {
    // Audit events as kmes-shimd's audit source writes them (origin class audit, docs/AUDIT.md
    // "Mapping"), put into shard 0 before eventd starts: no emitter may write audit.* (issue 39),
    // and the kernel's own audit would make the counts depend on the machine.
    std::vector<std::pair<std::string, json>> events;
    std::map<std::string, int64_t> expected;
    for (int i = 0; i < 300; ++i) {
        const std::string key = i % 3 == 0 ? "exec" : i % 3 == 1 ? "identity" : "time-change";
        const int uid = 1000 + i % 5, euid = i % 7 == 0 ? 0 : uid, auid = 1000 + i % 4;
        const std::string exe = i % 2 ? "/usr/bin/sudo" : "/usr/bin/ls";
        const std::string success = i % 10 == 0 ? "no" : "yes";
        events.emplace_back("audit.syscall", json{{"serial", i + 1},
                                                  {"syscall", "execve"},
                                                  {"key", key},
                                                  {"uid", uid},
                                                  {"euid", euid},
                                                  {"auid", auid},
                                                  {"exe", exe},
                                                  {"success", success},
                                                  {"pid", 4000 + i},
                                                  {"record_types", {"SYSCALL", "EXECVE", "PROCTITLE"}}});
        if (key == "identity") ++expected["key"];
        if (uid == 1000 || euid == 1000 || auid == 1000) ++expected["ua"];
        if (exe == "/usr/bin/sudo") ++expected["exe"];
        if (success == "no") ++expected["success"];
    }
    for (int i = 0; i < 20; ++i)
        events.emplace_back("audit.user_login",
                            json{{"serial", 1000 + i}, {"auid", 1000}, {"res", "success"}, {"exe", "/usr/sbin/sshd"}});
    expected["ua"] += 20;  // their auid
    EnvOptions options = fast_commits();
    options.before_eventd = [&](const std::string& store) { add_audit_rows(store, events); };
    QueryEnv env(options);
    REQUIRE(await_count(env, "EVENTS audit.* COUNT", 320, std::chrono::seconds(20)) == 320);

    const std::vector<std::string> fields = {"key", "uid", "euid", "auid", "exe", "success", "pid", "event_type"};
    for (const std::string& field : fields) REQUIRE(env.query("EVENTS INDEX " + field).exit_code == 0);
    // The shard the events went to (all from CPU 0): its indexes converge in a quiet period.
    std::string shard;
    for (const std::string& name : {"shard-0000.db", "shard-0001.db"})
        if (fs::exists(fs::path(env.store()) / name) &&
            !rows(fs::path(env.store()) / name, "SELECT 1 FROM events WHERE event_type = 'audit.syscall' LIMIT 1")
                 .empty())
            shard = name;
    REQUIRE_FALSE(shard.empty());
    CHECK(eventually([&] { return shard_indexes(env, shard).size() == fields.size(); }, std::chrono::seconds(30)));
    const fs::path file = fs::path(env.store()) / shard;

    struct Equivalent {
        const char* ausearch;
        std::string query;
        int64_t count;
        std::string plan;  // what EXPLAIN QUERY PLAN must show
    };
    const std::vector<Equivalent> table = {
        {"-k identity", "EVENTS audit.* WHERE key == \"identity\"", expected["key"], "idx_events_payload_key"},
        {"-ua 1000", "EVENTS audit.* WHERE uid == 1000 OR euid == 1000 OR auid == 1000", expected["ua"],
         "MULTI-INDEX OR"},
        {"-ui 1000", "EVENTS audit.* WHERE uid == 1000", 60, "idx_events_payload_uid"},
        {"-m USER_LOGIN", "EVENTS audit.user_login", 20, "idx_events_event_type"},
        {"-x /usr/bin/sudo", "EVENTS audit.* WHERE exe == \"/usr/bin/sudo\"", expected["exe"],
         "idx_events_payload_exe"},
        {"--success no", "EVENTS audit.* WHERE success == \"no\"", expected["success"], "idx_events_payload_success"},
        {"-p 4242", "EVENTS audit.* WHERE pid == 4242", 1, "idx_events_payload_pid"},
        // The time bound or the type's range, whichever SQLite finds narrower.
        {"-ts recent", "EVENTS audit.* SINCE 10m ago", 320, "USING INDEX idx_events_"},
    };
    for (const Equivalent& e : table) {
        INFO("ausearch " << e.ausearch << " = " << e.query);
        CHECK(required_count(env, e.query + " COUNT") == e.count);
        const std::string plan = explain_query(file, e.query + " TAKE 100");
        INFO(plan);
        CHECK(plan.find(e.plan) != std::string::npos);
        CHECK(plan.find("SCAN events") == std::string::npos);  // never the whole table
    }
}

}  // namespace
}  // namespace eventd::query_it
