// The policy half of adaptive indexing (PSD-008 §3.3.2, §3.3.8, §3.3.9, §8.6.5) without a
// daemon: which fields a query counts, the counter, the policy computation driven by a clock
// the test sets, eventd-meta.db and admin_sd. The daemon side is tests/query/test_index.cpp.
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <thread>

#include <catch2/catch.hpp>

#include "eventd/index/admin_sd.hpp"
#include "eventd/query_language/index_candidates.hpp"
#include "eventd/index/field_counter.hpp"
#include "eventd/index/meta_db.hpp"
#include "eventd/index/policy.hpp"
#include "eventd/index/policy_thread.hpp"
#include "eventd/index/where_fields.hpp"
#include "eventd/query_language/parser.hpp"
#include "support/temp_dir.hpp"

namespace ix = eventd::index;
namespace fs = std::filesystem;

namespace {

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kHour = 3600 * kSecond;

std::vector<std::string> fields_of(const std::string& text) {
    auto q = eventd::query::parse(text, 0);
    REQUIRE(q.ok());
    return ix::where_fields(*q);
}

std::vector<std::string> names(const ix::PolicyState& s) {
    std::vector<std::string> out;
    for (const auto& d : s.desired()) out.push_back(d.field_path);
    return out;
}

ix::FieldCounts times(const std::string& field, uint64_t n) { return {{field, n}}; }

// create 10, drop 3, window 1 h.
const ix::PolicyParams kParams{10, 3, kHour};

}  // namespace

TEST_CASE("a query counts each WHERE field once, and its type pattern as event_type", "[index]") {
    CHECK(fields_of("EVENTS TAKE 5").empty());
    CHECK(fields_of("EVENTS kacs.* TAKE 5") == std::vector<std::string>{"event_type"});
    CHECK(fields_of("EVENTS WHERE user == \"a\" OR (user == \"b\" AND source.name STARTS_WITH \"x\")") ==
          std::vector<std::string>{"source.name", "user"});
    CHECK(fields_of("EVENTS app.* WHERE event_type != \"x\" WHERE cpu_id IN (1, 2) COUNT BY user") ==
          std::vector<std::string>{"cpu_id", "event_type"});
    // SINCE/UNTIL (timestamp, always indexed), SELECT, SORT and aggregations are not predicates.
    CHECK(fields_of("EVENTS SINCE 1h ago SELECT user SORT host GROUP a SUM b").empty());
    CHECK(fields_of("EVENTS WHERE timestamp > 5 WHERE x IS NULL") == std::vector<std::string>{"timestamp", "x"});
}

TEST_CASE("the field counter hands over its bumps once and is bounded", "[index]") {
    ix::FieldCounter c;
    const ix::Contributor admin{0, true};
    c.count({"user", "event_type"}, admin);
    c.count({"user"}, admin);
    CHECK(c.peek().at("user").count == 2);
    auto taken = c.take();
    CHECK(taken.at("user").count == 2);
    CHECK(taken.at("event_type").count == 1);
    CHECK(c.take().empty());
    for (size_t i = 0; i < ix::FieldCounter::kMaxPendingFields; ++i) c.count({"f" + std::to_string(i)}, admin);
    c.count({"one.too.many", "f0"}, admin);
    CHECK(c.overflowed() == 1);
    CHECK(c.peek().at("f0").count == 2);
}

TEST_CASE("an unprivileged user counts within its budget; administrators keep their reserve", "[index]") {
    ix::FieldCounter c;
    c.start_user_window(4);
    const ix::Contributor nobody{65534, false}, other{1000, false}, admin{0, true};
    // One user alone brings a field at most to the cap (below CreateThreshold).
    for (int i = 0; i < 10; ++i) c.count({"pin"}, nobody);
    CHECK(c.peek().at("pin").count == 4);
    CHECK_FALSE(c.peek().at("pin").by_admin);
    CHECK(c.overflowed() == 6);
    // Another user and an administrator count on top of it.
    c.count({"pin"}, other);
    c.count({"pin"}, admin);
    CHECK(c.peek().at("pin").count == 6);
    CHECK(c.peek().at("pin").by_admin);
    // A user invents fields: only kMaxFieldsPerUser of them count in one user window.
    std::vector<std::string> invented;
    for (int i = 0; i < 500; ++i) invented.push_back("x" + std::to_string(i));
    c.count(invented, nobody);
    CHECK(c.peek().size() == ix::FieldCounter::kMaxFieldsPerUser);  // "pin" was the first of its budget
    // A new user window: budgets start over.
    c.start_user_window(4);
    c.count({"pin"}, nobody);
    CHECK(c.peek().at("pin").count == 7);
}

TEST_CASE("unprivileged users together cannot fill the counter table: the admins' reserve stays free", "[index]") {
    ix::FieldCounter c;
    c.start_user_window(10);
    // As many users as it takes, each inventing its whole budget of fields.
    const size_t users = ix::FieldCounter::kMaxPendingFields / ix::FieldCounter::kMaxFieldsPerUser + 10;
    for (size_t u = 0; u < users; ++u) {
        std::vector<std::string> fields;
        for (size_t i = 0; i < ix::FieldCounter::kMaxFieldsPerUser; ++i)
            fields.push_back("u" + std::to_string(u) + "f" + std::to_string(i));
        c.count(fields, ix::Contributor{static_cast<uid_t>(1000 + u), false});
    }
    CHECK(c.peek().size() == ix::FieldCounter::kMaxPendingFields - ix::FieldCounter::kAdminReserve);
    c.count({"root.field"}, ix::Contributor{0, true});
    CHECK(c.peek().at("root.field").count == 1);
    // The policy's persistent table keeps the same reserve.
    ix::PolicyState state;
    state.add_counts(c.take(), 1);
    CHECK(state.counters().size() == ix::PolicyState::kMaxFields - ix::PolicyState::kAdminReserve);
    CHECK(state.counters().count("root.field") == 1);
    ix::FieldCounts more;
    for (int i = 0; i < 2000; ++i) more.emplace("late" + std::to_string(i), ix::FieldBump{1, false});
    state.add_counts(more, 2);
    CHECK(state.counters().count("late0") == 0);  // the unprivileged share was full already
    state.add_counts({{"admin.late", ix::FieldBump{1, true}}}, 3);
    CHECK(state.counters().count("admin.late") == 1);
}

TEST_CASE("candidates: the §3.3.6 header columns and payload paths, never timestamp or sequence", "[index]") {
    for (const char* f : {"event_type", "origin_class", "cpu_id", "effective_token_guid", "true_token_guid",
                          "process_guid", "boot_id", "user", "source.name", "id"})
        CHECK(eventd::query::is_candidate(f));
    for (const char* f : {"timestamp", "sequence", "payload", ""}) CHECK_FALSE(eventd::query::is_candidate(f));
    CHECK_FALSE(eventd::query::is_expression_field("event_type"));
    CHECK(eventd::query::is_expression_field("source.name"));
}

TEST_CASE("a field enters at the create threshold within its window, most queried first", "[index]") {
    ix::PolicyState s;
    s.add_counts(times("user", 9), 0);
    CHECK_FALSE(s.recompute(kParams, 10 * kSecond));
    CHECK(names(s).empty());
    s.add_counts({{"user", 1}, {"host", 25}, {"timestamp", 500}, {"sequence", 500}}, 20 * kSecond);
    CHECK(s.recompute(kParams, 30 * kSecond));
    CHECK(names(s) == std::vector<std::string>{"host", "user"});  // by frequency; never timestamp
    CHECK(s.desired()[1].is_expression);
    s.add_counts(times("user", 30), 40 * kSecond);
    CHECK(s.recompute(kParams, 50 * kSecond));
    CHECK(names(s) == std::vector<std::string>{"user", "host"});
    CHECK_FALSE(s.recompute(kParams, 60 * kSecond));  // nothing new: no change
}

TEST_CASE("a member leaves only at the end of a window below the drop threshold (hysteresis)", "[index]") {
    ix::PolicyState s;
    s.add_counts({{"user", 10}, {"host", 10}}, 0);
    s.recompute(kParams, kSecond);
    REQUIRE(names(s) == std::vector<std::string>{"host", "user"});
    // Window 1 ends (both entered with 10 ≥ drop): both stay, windows restart with 0.
    s.recompute(kParams, kHour);
    CHECK(names(s) == std::vector<std::string>{"host", "user"});
    CHECK(s.counters().at("user").count == 0);
    CHECK(s.counters().at("user").window_start_ns == kHour);
    // Window 2: user queried 3 times (= drop: stays), host twice (< drop: leaves at the end).
    s.add_counts({{"user", 3}, {"host", 2}}, kHour + kSecond);
    CHECK_FALSE(s.recompute(kParams, 2 * kHour - kSecond));  // not over yet: nobody is judged
    CHECK(s.recompute(kParams, 2 * kHour));
    CHECK(names(s) == std::vector<std::string>{"user"});
    CHECK(s.counters().count("host") == 0);  // neither desired nor counted now: forgotten
    // Between the thresholds a member stays, a non-member does not enter.
    s.add_counts({{"user", 5}, {"host", 5}}, 2 * kHour + kSecond);
    s.recompute(kParams, 3 * kHour);
    CHECK(names(s) == std::vector<std::string>{"user"});
}

TEST_CASE("EVENTS INDEX puts a field first until a whole window of it ends below the drop threshold", "[index]") {
    ix::PolicyState s;
    s.add_counts(times("user", 50), 0);
    s.recompute(kParams, kSecond);
    s.add_manual("cpu_id", 30 * 60 * kSecond);  // half way through user's window
    s.recompute(kParams, 30 * 60 * kSecond);
    CHECK(names(s) == std::vector<std::string>{"cpu_id", "user"});
    CHECK_FALSE(s.desired()[0].is_expression);
    s.add_manual("source.name", 40 * 60 * kSecond);
    s.recompute(kParams, 40 * 60 * kSecond);
    CHECK(names(s) == std::vector<std::string>{"source.name", "cpu_id", "user"});  // newest INDEX first
    // user's window ends (50 ≥ drop); cpu_id's has not: it stays although never queried.
    s.add_counts(times("user", 500), 50 * 60 * kSecond);
    s.recompute(kParams, kHour);
    CHECK(names(s) == std::vector<std::string>{"source.name", "cpu_id", "user"});  // INDEX keeps first place
    // cpu_id's own window (from its INDEX) ends with 0 queries: it leaves.
    s.recompute(kParams, kHour + 30 * 60 * kSecond);
    CHECK(names(s) == std::vector<std::string>{"source.name", "user"});
}

TEST_CASE("a persisted set keeps its order until counts reorder it", "[index]") {
    std::map<std::string, ix::FieldWindow> counters{{"b", {40, 0}}, {"a", {20, 0}}};
    ix::PolicyState s(counters, {{"a", true}, {"b", true}, {"c", true}});
    CHECK(names(s) == std::vector<std::string>{"a", "b", "c"});
    // c has no counter: its window starts now, so it is judged a whole window later.
    s.recompute(kParams, 10 * kSecond);
    CHECK(names(s) == std::vector<std::string>{"b", "a", "c"});
    CHECK(s.counters().at("c").window_start_ns == 10 * kSecond);
    s.recompute(kParams, kHour);  // a and b's windows end (≥ drop), c's not yet
    CHECK(names(s) == std::vector<std::string>{"b", "a", "c"});
    s.recompute(kParams, kHour + 10 * kSecond);
    CHECK(names(s) == std::vector<std::string>{"b", "a"});
}

TEST_CASE("a window that starts in the future (clock set back) restarts rather than never ending", "[index]") {
    ix::PolicyState s({{"user", {50, 100 * kHour}}}, {{"user", true}});
    s.recompute(kParams, kHour);
    CHECK(s.counters().at("user").window_start_ns == kHour);
    s.recompute(kParams, 2 * kHour);  // a whole window since the restart: judged on its 50
    CHECK(names(s) == std::vector<std::string>{"user"});
    s.recompute(kParams, 3 * kHour);
    CHECK(names(s).empty());
}

namespace {

int64_t scalar(const fs::path& db, const std::string& sql) {
    sqlite3* raw = nullptr;
    REQUIRE(sqlite3_open_v2(db.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
    sqlite3_stmt* stmt = nullptr;
    REQUIRE(sqlite3_prepare_v2(raw, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK);
    REQUIRE(sqlite3_step(stmt) == SQLITE_ROW);
    const int64_t v = sqlite3_column_int64(stmt, 0);
    sqlite3_finalize(stmt);
    sqlite3_close(raw);
    return v;
}

std::string text(const fs::path& db, const std::string& sql) {
    sqlite3* raw = nullptr;
    REQUIRE(sqlite3_open_v2(db.c_str(), &raw, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK);
    sqlite3_stmt* stmt = nullptr;
    REQUIRE(sqlite3_prepare_v2(raw, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK);
    std::string out;
    if (sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_text(stmt, 0))
        out = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    sqlite3_finalize(stmt);
    sqlite3_close(raw);
    return out;
}

}  // namespace

TEST_CASE("eventd-meta.db is created with the §3.3.9 schema, WAL, synchronous NORMAL, mode 0600", "[index]") {
    test_support::TempDir dir;
    ::umask(022);
    auto opened = ix::MetaDb::open(dir.path(), 1'764'043'709'000'000'000);
    REQUIRE(opened.ok());
    const fs::path path = dir.path() / "eventd-meta.db";
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    CHECK(st.st_uid == ::geteuid());
    CHECK(opened->db.pragma("synchronous").value() == 1);  // NORMAL
    CHECK(text(path, "PRAGMA journal_mode") == "wal");
    CHECK(text(path, "SELECT sql FROM sqlite_master WHERE name = 'index_counters'") ==
          "CREATE TABLE index_counters(field_path TEXT PRIMARY KEY, query_count INTEGER NOT NULL, window_start "
          "INTEGER NOT NULL)");
    CHECK(text(path, "SELECT sql FROM sqlite_master WHERE name = 'desired_indexes'") ==
          "CREATE TABLE desired_indexes(field_path TEXT PRIMARY KEY, priority INTEGER NOT NULL, is_expression "
          "INTEGER NOT NULL)");
    CHECK(text(path, "SELECT sql FROM sqlite_master WHERE name = 'meta'") ==
          "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)");
    CHECK(scalar(path, "SELECT count(*) FROM sqlite_master WHERE type = 'table'") == 3);
    CHECK(text(path, "SELECT value FROM meta WHERE key = 'schema_version'") == "1");
    CHECK(text(path, "SELECT value FROM meta WHERE key = 'created_at'") == "2025-11-25T04:08:29Z");
    CHECK(text(path, "SELECT value FROM meta WHERE key = 'admin_sd'") == "[\"group:adm\"]");
    CHECK(scalar(path, "SELECT count(*) FROM meta") == 3);
}

TEST_CASE("eventd-meta.db keeps counters and the desired set in priority order", "[index]") {
    test_support::TempDir dir;
    {
        auto opened = ix::MetaDb::open(dir.path(), 1);
        REQUIRE(opened.ok());
        REQUIRE(opened->db.save({{"user", {7, 123}}, {"event_type", {2, 456}}}, {{"user", true}, {"event_type", false}})
                    .ok());
    }
    auto again = ix::MetaDb::open(dir.path(), 2);
    REQUIRE(again.ok());
    CHECK_FALSE(again->set_aside_as);
    const ix::MetaContents& c = again->contents;
    CHECK(c.counters.at("user").count == 7);
    CHECK(c.counters.at("user").window_start_ns == 123);
    CHECK(c.desired == std::vector<ix::DesiredIndex>{{"user", true}, {"event_type", false}});
    CHECK(scalar(dir.path() / "eventd-meta.db",
                 "SELECT priority FROM desired_indexes WHERE field_path = 'event_type'") == 1);
    CHECK(c.admin_sd == std::optional<std::string>("[\"group:adm\"]"));
}

TEST_CASE("an unreadable or unknown-version eventd-meta.db is set aside and recreated", "[index]") {
    test_support::TempDir dir;
    const fs::path path = dir.path() / "eventd-meta.db";
    SECTION("garbage bytes") {
        std::ofstream(path) << std::string(8192, 'x');
        std::ofstream(path.string() + "-wal") << "junk";
    }
    SECTION("schema_version 99") {
        {
            auto opened = ix::MetaDb::open(dir.path(), 1);
            REQUIRE(opened.ok());
            REQUIRE(opened->db.save({{"user", {7, 1}}}, {{"user", true}}).ok());
        }
        text(path, "UPDATE meta SET value = '99' WHERE key = 'schema_version'");
    }
    auto opened = ix::MetaDb::open(dir.path(), 555);
    REQUIRE(opened.ok());
    CHECK(opened->set_aside_as == std::optional<std::string>("eventd-meta.db.corrupt-555"));
    CHECK(fs::exists(dir.path() / "eventd-meta.db.corrupt-555"));
    CHECK(opened->contents.desired.empty());
    CHECK(opened->contents.counters.empty());
    CHECK(text(path, "SELECT value FROM meta WHERE key = 'schema_version'") == "1");
}

TEST_CASE("admin_sd: principals in the Security.Admins syntax, root always", "[index]") {
    std::vector<std::string> warnings;
    auto sd = ix::AdminSd::parse(R"(["uid:1234", "gid:777", "user:no-such-user-xyz"])", warnings);
    REQUIRE(sd.ok());
    CHECK(warnings.size() == 1);  // the unknown user is dropped, not an error
    eventd::access::Caller root, alice, member, other;
    alice.uid = 1234;
    member.uid = 2000;
    member.groups = {2000, 777};  // a supplementary group
    other.uid = 3000;
    other.groups = {3000};
    CHECK(sd->allows(root));
    CHECK(sd->allows(alice));
    CHECK(sd->allows(member));
    CHECK_FALSE(sd->allows(other));
    CHECK_FALSE(ix::AdminSd::parse("not json", warnings).ok());
    CHECK_FALSE(ix::AdminSd::parse(R"({"a": 1})", warnings).ok());
    CHECK_FALSE(ix::AdminSd::parse(R"(["wizard:merlin"])", warnings).ok());
    CHECK(ix::AdminSd::defaults().allows(root));
    CHECK_FALSE(ix::AdminSd::defaults().allows(other));
}

namespace {

// A policy thread on a temporary store with a clock the test moves.
struct PolicyRig {
    test_support::TempDir dir;
    ix::DesiredSetHolder holder;
    ix::FieldCounter counter;
    std::atomic<int64_t> now{1000 * kSecond};
    std::unique_ptr<ix::PolicyThread> open(std::chrono::milliseconds interval = std::chrono::hours(1)) {
        ix::PolicySettings settings{kParams, interval};
        return ix::PolicyThread::open({dir.path(), &holder, &counter, settings, [this] { return now.load(); }});
    }
    std::vector<std::string> published() const {
        std::vector<std::string> out;
        // Hold the snapshot: a range-for over `holder.current()->indexes` would drop the
        // temporary shared_ptr before the loop, and the policy thread's next publish could free
        // the set under it (C++20 does not extend that temporary's life; TSan found it).
        const std::shared_ptr<const ix::DesiredSet> set = holder.current();
        for (const auto& d : set->indexes) out.push_back(d.field_path);
        return out;
    }
};

const auto kSoon = [] { return std::chrono::steady_clock::now() + std::chrono::seconds(10); };

}  // namespace

TEST_CASE("policy thread: INDEX for admins only, answered after the save; stop saves the counters", "[index]") {
    PolicyRig rig;
    {
        auto policy = rig.open();
        policy->start();
        eventd::access::Caller root, outsider;
        outsider.uid = 4242;
        outsider.groups = {4242};
        const auto refused = policy->index(outsider, "user", kSoon());
        REQUIRE_FALSE(refused.ok());
        CHECK(refused.error().code == base::ErrorCode::access_denied);
        CHECK_THAT(refused.error().message, Catch::Contains("INDEX needs administrator rights"));
        REQUIRE(policy->index(root, "user", kSoon()).ok());
        CHECK(rig.published() == std::vector<std::string>{"user"});
        // Saved before the answer: a second connection sees it now.
        auto peek = ix::MetaDb::open(rig.dir.path(), rig.now.load());
        REQUIRE(peek.ok());
        CHECK(peek->contents.desired == std::vector<ix::DesiredIndex>{{"user", true}});
        rig.counter.count({"host"}, ix::Contributor{0, true});
        rig.counter.count({"host"}, ix::Contributor{0, true});
        const auto status = policy->status_records();
        REQUIRE(status.size() == 1);
        CHECK(status[0]["desired"][0]["field"] == "user");
        CHECK(status[0]["desired"][0]["manual"] == true);
        CHECK(status[0]["counters"][0]["field"] == "host");  // pending counts show too
        CHECK(status[0]["counters"][0]["query_count"] == 2);
        policy->stop();
    }
    auto reopened = ix::MetaDb::open(rig.dir.path(), rig.now.load());
    REQUIRE(reopened.ok());
    CHECK(reopened->contents.counters.at("host").count == 2);
    // A restart publishes the saved set before anything else runs.
    ix::DesiredSetHolder fresh;
    auto again = ix::PolicyThread::open(
        {rig.dir.path(), &fresh, &rig.counter, {kParams, std::chrono::hours(1)}, [&] { return rig.now.load(); }});
    CHECK(fresh.current()->indexes == std::vector<ix::DesiredIndex>{{"user", true}});
}

TEST_CASE("policy thread: a run every interval admits counted fields and publishes them", "[index]") {
    PolicyRig rig;
    auto policy = rig.open(std::chrono::milliseconds(20));
    policy->start();
    for (int i = 0; i < 10; ++i) rig.counter.count({"source.name"}, ix::Contributor{0, true});
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (rig.published().empty() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    REQUIRE(std::chrono::steady_clock::now() < deadline);  // the thread ran, not the clock out (issue 40)
    CHECK(rig.published() == std::vector<std::string>{"source.name"});
    // Its first window (1 h of the test's clock) ends with 10 ≥ drop: it stays; the next one
    // ends with 0: it leaves.
    auto pass_at = [&](int64_t t) {
        rig.now = t;
        while (policy->status_records()[0]["last_recompute_ns"] != t && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        REQUIRE(policy->status_records()[0]["last_recompute_ns"] == t);  // a pass at t, not a deadline
    };
    const int64_t start = rig.now.load();
    pass_at(start + kHour);
    CHECK(rig.published() == std::vector<std::string>{"source.name"});
    pass_at(start + 2 * kHour);
    CHECK(rig.published().empty());
}
