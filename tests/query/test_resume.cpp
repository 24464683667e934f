// [resume]: resumable streams end to end (issue 12 part 1; docs/QUERY-SERVER.md "Cursors"),
// against a real kmes-shimd + eventd and the fixture store: every frame of a resumed query
// carries a cursor; resuming after a frame's cursor delivers exactly the records after it,
// also after an eventd restart, then continues live; refusals (clauses, garbage, another
// store, a position real retention deleted) and allow_gap's gap frame with the exact count;
// access control applies; eventctl --cursor-file killed with SIGKILL in a loop writes every
// record to its output file exactly once.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "store/cursor_key.hpp"
#include "store/store_identity.hpp"
#include "store/store_position.hpp"
#include "support/daemon_process.hpp"
#include "support/eventually.hpp"
#include "support/local_users.hpp"
#include "support/query_env.hpp"
#include "support/stream_helpers.hpp"
#include "support/wire_client.hpp"

namespace eventd::query_it {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

// One request with after (and allow_gap) over the raw protocol; the frames up to end, watch or
// error.
std::vector<json> resume(QueryEnv& env, const std::string& query, const std::string& after, bool allow_gap = false) {
    WireClient client(env.socket());
    json request = {{"query", query}, {"after", after}};
    if (allow_gap) request["allow_gap"] = true;
    REQUIRE(client.send_frame(request));
    return client.read_reply(seconds(10));
}

// The `i` payload values of the records of `frames`, in order.
std::vector<int64_t> values_of(const std::vector<json>& frames, const char* key = "i") {
    std::vector<int64_t> out;
    for (const json& r : records_of(frames)) out.push_back(r.value(key, int64_t(-1)));
    return out;
}

std::vector<int64_t> range(int64_t from, int64_t to) {
    std::vector<int64_t> v;
    for (int64_t i = from; i <= to; ++i) v.push_back(i);
    return v;
}

// Every frame of a resumed reply: ok frames and the closing end/watch carry a cursor.
void check_cursors(const std::vector<json>& frames) {
    REQUIRE_FALSE(frames.empty());
    for (const json& f : frames) {
        INFO(f.dump());
        const std::string status = f.value("status", "");
        if (status == "ok" || status == "end" || status == "watch") CHECK(f.contains("cursor"));
    }
}

std::string error_of(const std::vector<json>& frames) {
    REQUIRE_FALSE(frames.empty());
    INFO(frames.back().dump());
    REQUIRE(frames.back().value("status", "") == "error");
    return frames.back().value("error", "");
}

}  // namespace

TEST_CASE("a cursor resumes exactly after its frame, across an eventd restart, and then live", "[resume]") {
    QueryEnv env(fast_commits({{"QueryResponseTargetBytes", 1024}}));
    for (int i = 1; i <= 40; ++i) emit("res.one", {{"i", i}, {"pad", std::string(100, 'p')}});
    REQUIRE(await_count(env, "EVENTS res.one COUNT", 40, seconds(10)) == 40);

    // From the oldest record (""): every record in commit order, several frames, each with a cursor.
    const std::vector<json> all = resume(env, "EVENTS res.one", "");
    check_cursors(all);
    REQUIRE(all.back().value("status", "") == "end");
    CHECK(values_of(all) == range(1, 40));
    REQUIRE(all.size() >= 4);  // 1 KiB frames of records of ~300 bytes

    // After the second frame's cursor: exactly what followed it.
    const size_t in_first_two = all[0]["records"].size() + all[1]["records"].size();
    const std::string after_two = all[1]["cursor"];
    CHECK(values_of(resume(env, "EVENTS res.one", after_two)) == range(int64_t(in_first_two) + 1, 40));
    // COUNT after a cursor: how many a resumed stream would deliver (a follower's backlog).
    const auto counted = resume(env, "EVENTS res.one COUNT", after_two);
    REQUIRE(records_of(counted).size() == 1);
    CHECK(records_of(counted)[0] == json{{"count", 40 - int64_t(in_first_two)}});
    CHECK(records_of(resume(env, "EVENTS res.one COUNT", ""))[0] == json{{"count", 40}});
    CHECK(records_of(resume(env, "EVENTS res.one WHERE i > 30 COUNT", after_two))[0] == json{{"count", 10}});
    // The end frame's cursor: nothing more.
    const std::string at_end = all.back()["cursor"];
    const auto nothing = resume(env, "EVENTS res.one", at_end);
    CHECK(records_of(nothing).empty());
    CHECK(nothing.back().value("status", "") == "end");

    // A cursor stays valid across an eventd restart.
    env.stop_eventd();
    env.start_eventd();
    CHECK(values_of(resume(env, "EVENTS res.one", after_two)) == range(int64_t(in_first_two) + 1, 40));

    // A resumed stream: the catch-up, watch (with a cursor), then live frames with cursors.
    WireClient stream(env.socket());
    REQUIRE(stream.send_frame({{"query", "EVENTS res.one STREAM"}, {"after", after_two}}));
    const auto caught_up = stream.read_reply(seconds(10));
    check_cursors(caught_up);
    REQUIRE(is_watch(caught_up.back()));
    CHECK(values_of(caught_up) == range(int64_t(in_first_two) + 1, 40));
    emit("res.one", {{"i", 41}});
    emit("res.other", {{"i", 1000}});  // not matching
    emit("res.one", {{"i", 42}});
    std::vector<json> live;
    while (values_of(live).size() < 2) {
        auto f = stream.read_frame(seconds(5));
        REQUIRE(f);
        live.push_back(*f);
    }
    check_cursors(live);
    CHECK(values_of(live) == std::vector<int64_t>{41, 42});
    // The live frame's cursor resumes after it, like any other.
    CHECK(values_of(resume(env, "EVENTS res.one", live.back()["cursor"])).empty());
    if (live.size() == 2)
        CHECK(values_of(resume(env, "EVENTS res.one", live.front()["cursor"])) == std::vector<int64_t>{42});

    // A plain stream's watch frame names its snapshot: resuming there gives only what came later.
    WireClient plain(env.socket());
    REQUIRE(plain.send_query("EVENTS res.one STREAM TAKE 1 SELECT i"));
    const auto initial = plain.read_reply(seconds(10));
    REQUIRE(is_watch(initial.back()));
    CHECK(values_of(initial) == std::vector<int64_t>{42});
    emit("res.one", {{"i", 43}});
    REQUIRE(await_count(env, "EVENTS res.one COUNT", 43, seconds(10)) == 43);
    CHECK(values_of(resume(env, "EVENTS res.one", initial.back()["cursor"])) == std::vector<int64_t>{43});
}

TEST_CASE("refused resumptions say why; allow_gap resumes a cursor of another store from the oldest record",
          "[resume]") {
    QueryEnv env;
    const auto all = resume(env, "EVENTS app.login SELECT user", "");
    REQUIRE(all.back().value("status", "") == "end");
    const size_t logins = records_of(all).size();
    REQUIRE(logins > 0);
    const std::string cursor = all.back()["cursor"];

    CHECK(error_of(resume(env, "EVENTS app.login TAKE 5", cursor)) ==
          "a resumed stream (after) delivers every matching record after the cursor in store order; it cannot be "
          "combined with TAKE (they shape an initial result, and a resumed stream has none)");
    CHECK_THAT(error_of(resume(env, "EVENTS app.login SINCE 1d ago SORT user COUNT BY user", cursor)),
               Catch::Contains("SINCE, SORT, an aggregate"));
    CHECK_THAT(error_of(resume(env, "EVENTS app.login COUNT STREAM", cursor)), Catch::Contains("an aggregate"));
    CHECK_THAT(error_of(resume(env, "EVENTS app.login", "garbage")), Catch::StartsWith("not a cursor eventd wrote"));
    CHECK_THAT(error_of(resume(env, "EVENTS app.login", "9.AAAA")), Catch::Contains("a cursor of a newer eventd"));
    CHECK(error_of(resume(env, "STATUS", cursor)) == "'after' resumes EVENTS queries only");

    // Sealed (issue 23 item 6): the position is not in the cursor's text, the same position
    // sealed twice gives unrelated texts, and a cursor altered in one character, a clear
    // version-1 cursor of this very store, or one sealed under another key are refused.
    const auto key = store::CursorKey::load_or_create(env.store()).value();
    const auto here = store::read_store_id(env.store()).value();
    auto position = key.open(cursor, here).value();
    REQUIRE_FALSE(position.last_id.empty());
    CHECK(cursor.rfind("2.", 0) == 0);
    // (the store id is in the clear by design; the files and row ids after it are not)
    CHECK(cursor.find(store::encode_cursor(position).substr(2 + 24, 16)) == std::string::npos);
    CHECK(key.seal(position) != key.seal(position));
    std::string altered = cursor;
    altered[altered.size() / 2 + 10] = altered[altered.size() / 2 + 10] == 'A' ? 'B' : 'A';
    CHECK_THAT(error_of(resume(env, "EVENTS app.login", altered)),
               Catch::StartsWith("not a cursor eventd wrote (it does not authenticate"));
    CHECK_THAT(error_of(resume(env, "EVENTS app.login", store::encode_cursor(position))),
               Catch::StartsWith("this cursor is of an older eventd (version 1, unsealed)"));
    CHECK_THAT(error_of(resume(env, "EVENTS app.login", store::CursorKey::random().seal(position))),
               Catch::StartsWith("not a cursor eventd wrote (it does not authenticate"));

    // Another store: a cursor naming a different store id.
    position.store[0] ^= 0xff;
    const std::string foreign = store::CursorKey::random().seal(position);
    CHECK_THAT(error_of(resume(env, "EVENTS app.login", foreign)),
               Catch::StartsWith("this cursor belongs to another event store") && Catch::Contains("allow_gap"));
    CHECK_THAT(error_of(resume(env, "EVENTS app.login COUNT", foreign)),
               Catch::StartsWith("this cursor belongs to another event store"));
    const auto gapped = resume(env, "EVENTS app.login SELECT user", foreign, true);
    REQUIRE(gapped.size() >= 2);
    CHECK(gapped.front().value("status", "") == "gap");
    CHECK(gapped.front()["lost"].is_null());  // unknown: nothing is known of the other store
    CHECK(records_of(gapped).size() == logins);
}

TEST_CASE("a position retention deleted is refused with the exact count; allow_gap resumes after the hole",
          "[resume]") {
    // The fixture's March 2026 rows are kept by EventRetentionDays 3650 (the environment's base);
    // 30 makes the real retention thread delete them (those of the active shards: the
    // historical shard-0002.db is not retained).
    QueryEnv env(EnvOptions{.eventd = {{"QueryResponseTargetBytes", 1024}}});
    // eventd's own synthetic.startup is committed shortly after it is ready: wait for it.
    REQUIRE(await_count(env, "EVENTS synthetic.startup COUNT", 1, seconds(10)) == 1);
    const auto before = resume(env, "EVENTS", "");
    REQUIRE(before.back().value("status", "") == "end");
    REQUIRE(before.size() >= 3);
    const std::string cursor = before.front()["cursor"];  // after the first frame
    const auto rest_before = records_of(resume(env, "EVENTS", cursor));
    env.reload({{"EventRetentionDays", 30}}, "EventRetentionDays");
    const int64_t old_rows = count(env, "EVENTS UNTIL 2026-04-01 COUNT");
    REQUIRE(old_rows > 0);
    // Only the historical file's March rows remain once retention has run.
    REQUIRE(await_count(env, "EVENTS UNTIL 2026-04-01 COUNT", 11, seconds(20)) == 11);

    const auto gapped = resume(env, "EVENTS", cursor, true);
    REQUIRE(gapped.front().value("status", "") == "gap");
    REQUIRE(gapped.front()["lost"].is_number_unsigned());
    const uint64_t lost = gapped.front()["lost"];
    const auto rest_after = records_of(gapped);
    // Exactly the records that were after the cursor and are gone now. (eventd's own records of
    // the reload and of the retention run were committed meanwhile: new, after the cursor too.)
    std::multiset<std::string> before_set;
    for (const json& r : rest_before) before_set.insert(r.dump());
    size_t kept = 0;
    for (const json& r : rest_after) {
        if (before_set.count(r.dump())) {
            ++kept;
        } else {
            INFO(r.dump());
            CHECK(r.value("event_type", "").rfind("synthetic.", 0) == 0);
        }
    }
    CHECK(lost == rest_before.size() - kept);
    CHECK(lost > 0);

    const std::string refused = error_of(resume(env, "EVENTS", cursor));
    CHECK_THAT(refused, Catch::StartsWith("the cursor's position is no longer stored: " + std::to_string(lost) +
                                          " records after it were deleted") &&
                            Catch::Contains("allow_gap"));
    // Resuming after the gapped catch-up: the gap was counted once, not again.
    const auto again = resume(env, "EVENTS", gapped.back()["cursor"]);
    CHECK(again.front().value("status", "") == "end");
}

TEST_CASE("a resumed query shows a user exactly what a plain one would", "[resume]") {
    ensure_test_users();
    const json policy = {{"Events",
                          {{"*", json::array({{{"allow", {"group:adm"}}}})},
                           {"app.login", json::array({{{"allow", {"group:eventd-auditors"}},
                                                       {"fields", {"timestamp", "event_type", "user"}}}})}}}};
    QueryEnv env(EnvOptions{.eventd = {{"Security", policy}}});
    const auto auditor = lookup_user("eventd-auditor");
    REQUIRE(auditor);
    const RunResult plain = env.query("EVENTS", auditor);
    REQUIRE(plain.exit_code == 0);
    std::multiset<std::string> expected;
    for (const json& r : parse_jsonl(plain.out)) expected.insert(r.dump());
    REQUIRE(!expected.empty());

    // A directory of the user's own for the cursor file.
    const std::string home = env.dir() + "/auditor";
    REQUIRE(::mkdir(home.c_str(), 0700) == 0);
    REQUIRE(::chown(home.c_str(), auditor->uid, auditor->gid) == 0);
    const std::string cursor_file = home + "/cursor";
    const RunResult resumed =
        run_command(command_as(auditor, {env.eventctl(), "--socket", env.socket(), "--format", "jsonl",
                                         "--cursor-file", cursor_file, "EVENTS"}),
                    seconds(20));
    INFO(resumed.err);
    REQUIRE(resumed.exit_code == 0);
    std::multiset<std::string> got;
    for (const json& r : parse_jsonl(resumed.out)) got.insert(r.dump());
    CHECK(got == expected);
}

// Issue 39 part 1, the security review's reproduction: root's `--cursor-file F` in a shared
// sticky directory (/tmp) where another user (the real user nobody) planted F.tmp, or F itself,
// as a link to a root file.
TEST_CASE("eventctl --cursor-file in a sticky shared directory follows no link another user planted", "[resume]") {
    QueryEnv env;
    const auto nobody = lookup_user("nobody");
    REQUIRE(nobody);
    const std::string shared = env.dir() + "/shared", victim = env.dir() + "/victim", cursor = shared + "/F";
    REQUIRE(::mkdir(shared.c_str(), 0700) == 0);
    REQUIRE(::chmod(shared.c_str(), 01777) == 0);
    std::ofstream(victim) << "victim\n";
    REQUIRE(::chmod(victim.c_str(), 0644) == 0);
    auto plant = [&](const std::string& at) {
        const RunResult r = run_command(command_as(nobody, {"/bin/ln", "-s", victim, at}), seconds(10));
        INFO(r.err);
        REQUIRE(r.exit_code == 0);
    };
    auto check_victim_untouched = [&] {
        std::ifstream in(victim);
        std::string text;
        std::getline(in, text);
        CHECK(text == "victim");
        struct stat st {};
        REQUIRE(::stat(victim.c_str(), &st) == 0);
        CHECK(st.st_uid == 0);
        CHECK((st.st_mode & 07777) == 0644);
    };
    const std::vector<std::string> argv = {env.eventctl(), "--socket",      env.socket(), "--format",
                                           "jsonl",        "--cursor-file", cursor,       "EVENTS"};

    plant(cursor + ".tmp");
    const RunResult saved = run_command(argv, seconds(20));
    INFO(saved.err);
    REQUIRE(saved.exit_code == 0);
    check_victim_untouched();
    struct stat st {};
    REQUIRE(::lstat(cursor.c_str(), &st) == 0);
    CHECK(S_ISREG(st.st_mode));
    CHECK(st.st_uid == 0);

    // F itself a link: not read through (nor written through: the rename would replace it).
    REQUIRE(::unlink(cursor.c_str()) == 0);
    plant(cursor);
    const RunResult linked = run_command(argv, seconds(20));
    INFO(linked.err);
    CHECK(linked.exit_code != 0);
    CHECK_THAT(linked.err, Catch::Contains(cursor + " is a symbolic link"));
    check_victim_untouched();

    // F another user's file: it may have been planted (fs.protected_regular's rule).
    REQUIRE(::unlink(cursor.c_str()) == 0);
    const RunResult made = run_command(command_as(nobody, {"/bin/cp", victim, cursor}), seconds(10));
    REQUIRE(made.exit_code == 0);
    const RunResult foreign = run_command(argv, seconds(20));
    INFO(foreign.err);
    CHECK(foreign.exit_code != 0);
    CHECK_THAT(foreign.err, Catch::Contains(cursor + " belongs to uid " + std::to_string(nobody->uid)));
}

namespace {

// The kill loop of the --cursor-file tests: 25 rounds, each starting `argv` (an eventctl
// following `EVENTS loop.* STREAM SELECT i` with a cursor file) while 80 events arrive, then
// SIGKILL at a random moment — in the catch-up, live, between frames or inside a write. A last
// run is ended by Ctrl-C once `printed(run)` counts every event. `collect` gets every run's result.
// Returns how many events were emitted (their `i` are 1..n).
int kill_loop(QueryEnv& env, const std::vector<std::string>& argv, const std::function<size_t(Child&)>& printed,
              const std::function<void(const RunResult&)>& collect) {
    std::mt19937 rng(20261125);
    std::uniform_int_distribution<int> pause_ms(5, 250);
    constexpr int kRounds = 25, kPerRound = 80;
    int emitted = 0;
    for (int round = 0; round < kRounds; ++round) {
        Child eventctl(argv);
        for (int i = 0; i < kPerRound; ++i) {
            emit("loop.tick", {{"i", ++emitted}, {"pad", std::string(60, 'x')}});
            if (i % 20 == 0) std::this_thread::sleep_for(milliseconds(pause_ms(rng) / 10));
        }
        std::this_thread::sleep_for(milliseconds(pause_ms(rng)));
        eventctl.signal(SIGKILL);
        const RunResult r = eventctl.finish(seconds(5));
        INFO("round " << round << " stderr: " << r.err);
        CHECK(r.err.find("error") == std::string::npos);
        collect(r);
    }
    REQUIRE(await_count(env, "EVENTS loop.* COUNT", emitted, seconds(20)) == emitted);
    Child eventctl(argv);
    // One more event, so that the run is seen working (not only started) before Ctrl-C.
    emit("loop.tick", {{"i", ++emitted}});
    // Asserted (issue 40): a run never seen working would make the Ctrl-C below prove nothing.
    REQUIRE(test_support::eventually([&] { return printed(eventctl) >= static_cast<size_t>(emitted); }, seconds(20),
                                     milliseconds(100)));
    eventctl.signal(SIGINT);
    const RunResult r = eventctl.finish(seconds(5));
    INFO("last run: " << r.err << (r.timed_out ? " (timed out)" : "") << " signal " << r.term_signal);
    CHECK(r.exit_code == 0);
    collect(r);
    return emitted;
}

// How often each `i` occurs in jsonl text; a line that does not parse fails the test.
std::map<int64_t, int> count_values(const std::string& jsonl) {
    std::map<int64_t, int> seen;
    std::istringstream in(jsonl);
    std::string line;
    while (std::getline(in, line)) {
        INFO("line: " << line);
        ++seen[json::parse(line).at("i").get<int64_t>()];
    }
    return seen;
}

size_t line_count(const std::string& text) { return static_cast<size_t>(std::count(text.begin(), text.end(), '\n')); }

}  // namespace

TEST_CASE("eventctl --cursor-file killed at random moments writes every record to its file exactly once",
          "[resume]") {
    QueryEnv env(fast_commits({{"QueryResponseTargetBytes", 1024}}));
    const std::string out_file = env.dir() + "/out.jsonl";
    // `>>`: the file is appended to by every run, as an operator would.
    const std::vector<std::string> argv = {
        "/bin/sh", "-c",      "exec \"$0\" \"$@\" >> " + out_file, env.eventctl(), "--socket", env.socket(),
        "--format", "jsonl", "--cursor-file",                     env.dir() + "/loop.cursor", "EVENTS loop.* STREAM SELECT i"};
    const int emitted = kill_loop(
        env, argv, [&](Child&) { return line_count(kmes::it::read_text(out_file)); }, [](const RunResult&) {});

    // Every i exactly once, nothing else (what `sort | uniq -d` and a count would say).
    auto seen = count_values(kmes::it::read_text(out_file));
    std::vector<int64_t> twice, missing;
    for (int64_t i = 1; i <= emitted; ++i) {
        if (seen[i] > 1) twice.push_back(i);
        if (seen[i] == 0) missing.push_back(i);
    }
    INFO(emitted << " events");
    CHECK(twice.empty());
    CHECK(missing.empty());
    CHECK(seen.size() == static_cast<size_t>(emitted));
}

TEST_CASE("eventctl --cursor-file through a pipe, killed at random moments: nothing missing, at most a batch again",
          "[resume]") {
    // What a pipe allows (docs/EVENTCTL.md "Resuming"): a kill between writing a batch and
    // renaming its cursor repeats that batch; nothing is ever lost, and lines may only be cut
    // by the kill itself (the last line of a killed run).
    QueryEnv env(fast_commits({{"QueryResponseTargetBytes", 1024}}));
    const std::vector<std::string> argv = {env.eventctl(), "--socket",      env.socket(),
                                           "--format",     "jsonl",         "--cursor-file",
                                           env.dir() + "/pipe.cursor", "EVENTS loop.* STREAM SELECT i"};
    std::string out;  // everything the runs wrote into their pipes, whole lines only
    size_t cut_lines = 0, kills = 0;
    const int emitted = kill_loop(
        env, argv,
        [&](Child& running) {  // the last run's lines so far join `out` (finish() returns the rest)
            while (auto line = running.read_line(milliseconds(5))) out += *line + "\n";
            return line_count(out);
        },
        [&](const RunResult& r) {
            const size_t end = r.out.rfind('\n');
            out += r.out.substr(0, end == std::string::npos ? 0 : end + 1);
            if (end + 1 != r.out.size()) ++cut_lines;
            ++kills;
        });
    auto seen = count_values(out);
    std::vector<int64_t> missing;
    size_t repeated = 0;
    for (int64_t i = 1; i <= emitted; ++i) {
        if (seen[i] == 0) missing.push_back(i);
        if (seen[i] > 1) repeated += static_cast<size_t>(seen[i] - 1);
    }
    INFO(emitted << " events, " << kills << " runs, " << repeated << " records repeated, " << cut_lines
                 << " runs ended inside a line");
    CHECK(missing.empty());
    // A batch is one frame (1 KiB here: at most ~12 of these records); a kill repeats at most one.
    CHECK(repeated <= (kills - 1) * 12);
}

}  // namespace eventd::query_it
