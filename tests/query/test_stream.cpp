// [stream]: STREAM queries end to end (PSD-008 §8.7). Events emitted through the real shim
// (libkmes kmes_emit, from a thread pinned to CPU 0 so they share one ring, one shard and so one
// commit order) reach `eventctl` through a pipe one by one, in order, with WHERE and SELECT
// applied; a client that stops reading is dropped while ingestion loses nothing; every query
// limit answers with its exact text; shutdown ends streams with "eventd is shutting down".
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "kmes/kmes.h"
#include "support/eventually.hpp"
#include "support/local_users.hpp"
#include "support/query_env.hpp"
#include "support/store_reader.hpp"
#include "support/stream_helpers.hpp"
#include "support/wire_client.hpp"

namespace eventd::query_it {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

TEST_CASE("a stream through a pipe shows the initial result, then each matching event as it commits", "[stream]") {
    QueryEnv env(fast_commits());
    // STREAM in the middle of the query; the initial result comes from the fixture.
    Child eventctl(env.query_argv("EVENTS bulk.* WHERE i > 22 STREAM SELECT i"));
    CHECK(eventctl.read_line(seconds(10)) == R"({"i":24})");
    CHECK(eventctl.read_line(seconds(5)) == R"({"i":23})");

    // One event at a time: each shows up without waiting for more output.
    emit("bulk.live", {{"i", 101}, {"note", "first"}});
    CHECK(eventctl.read_line(seconds(5)) == R"({"i":101})");
    emit("bulk.live", {{"i", 5}});     // WHERE i > 22: not shown
    emit("other.type", {{"i", 500}});  // type pattern bulk.*: not shown
    emit("bulk.live", {{"i", 102}});
    CHECK(eventctl.read_line(seconds(5)) == R"({"i":102})");

    // A burst arrives complete and in commit order.
    for (int i = 103; i <= 160; ++i) emit("bulk.live", {{"i", i}, {"pad", std::string(200, 'x')}});
    for (int i = 103; i <= 160; ++i) {
        INFO("waiting for i = " << i << "; stderr: " << eventctl.err_so_far());
        REQUIRE(eventctl.read_line(seconds(5)) == json{{"i", i}}.dump());
    }

    // SIGINT ends the stream cleanly.
    eventctl.signal(SIGINT);
    const RunResult r = eventctl.finish(seconds(5));
    INFO("stderr: " << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.empty());
}

TEST_CASE("a stream over the raw protocol: initial records, watch, then live frames", "[stream]") {
    QueryEnv env(fast_commits());
    WireClient client(env.socket());
    REQUIRE(client.send_query("EVENTS STREAM live.* WHERE n >= 2 SELECT n, kind"));
    auto frames = client.read_reply(seconds(10));
    INFO(json(frames).dump());
    REQUIRE(!frames.empty());
    CHECK(records_of(frames).empty());
    REQUIRE(is_watch(frames.back()));
    emit("live.a", {{"n", 1}, {"kind", "low"}});
    emit("live.b", {{"n", 2}, {"kind", "ok"}, {"extra", true}});
    emit("live.a", {{"n", 3}});
    std::vector<json> live;
    const auto deadline = std::chrono::steady_clock::now() + seconds(10);
    while (live.size() < 2 && std::chrono::steady_clock::now() < deadline) {
        auto f = client.read_frame(milliseconds(500));
        if (!f) continue;
        INFO(f->dump());
        REQUIRE(f->value("status", "") == "ok");
        for (const auto& r : (*f)["records"]) live.push_back(r);
    }
    REQUIRE(live.size() == 2);
    CHECK(live[0] == json({{"n", 2}, {"kind", "ok"}}));
    CHECK(live[1] == json({{"n", 3}}));
}

TEST_CASE("a stream client that stops reading is dropped; ingestion goes on without gaps", "[stream]") {
    QueryEnv env(fast_commits());
    WireClient slow(env.socket(), 4096);
    REQUIRE(slow.send_query("EVENTS flood.* STREAM"));
    const auto initial = slow.read_reply(seconds(10));
    INFO(json(initial).dump());
    REQUIRE(!initial.empty());
    REQUIRE(is_watch(initial.back()));

    // ~6 MB of matching events while the client reads nothing.
    constexpr int kEvents = 3000;
    const std::string pad(2000, 'p');
    for (int i = 1; i <= kEvents; ++i) emit("flood.event", {{"i", i}, {"pad", pad}});

    // Others are served meanwhile, and every event is stored.
    CHECK(await_count(env, "EVENTS flood.event COUNT", kEvents, seconds(30)) == kEvents);
    CHECK(count(env, "EVENTS synthetic.gap COUNT") == 0);
    CHECK(count(env, "EVENTS app.login COUNT") == 10);

    // The slow client finds an error frame (if one fitted) and then the end of the connection,
    // not an endless stream.
    bool error_frame = false;
    size_t records = 0;
    const auto deadline = std::chrono::steady_clock::now() + seconds(15);
    while (!slow.closed() && std::chrono::steady_clock::now() < deadline) {
        auto f = slow.read_frame(milliseconds(500));
        if (!f) continue;
        if (f->value("status", "") == "error") error_frame = true;
        if (f->contains("records")) records += (*f)["records"].size();
    }
    INFO("records received before the drop: " << records << ", error frame: " << error_frame);
    CHECK(slow.closed());
    CHECK(records < size_t(kEvents));
}

TEST_CASE("MaxStreamingQueries: the next stream is refused, plain queries still run", "[stream]") {
    QueryEnv env(fast_commits({{"MaxStreamingQueries", 2}}));
    std::vector<std::unique_ptr<WireClient>> streams;
    for (int i = 0; i < 2; ++i) {
        streams.push_back(std::make_unique<WireClient>(env.socket()));
        REQUIRE(streams.back()->send_query("EVENTS app.login STREAM COUNT"));
        const auto frames = streams.back()->read_reply(seconds(10));
        INFO(json(frames).dump());
        REQUIRE(!frames.empty());
        REQUIRE(is_watch(frames.back()));
    }
    const RunResult refused = env.query("EVENTS STREAM");
    CHECK(refused.exit_code == 1);
    CHECK(refused.out.empty());
    CHECK(refused.err.find("too many concurrent streaming queries") != std::string::npos);
    CHECK(count(env, "EVENTS app.login COUNT") == 10);
    streams.pop_back();  // a slot frees when a stream's client leaves
    bool accepted = false;
    for (int attempt = 0; attempt < 50 && !accepted; ++attempt) {
        WireClient again(env.socket());
        REQUIRE(again.send_query("EVENTS app.login STREAM"));
        const auto frames = again.read_reply(seconds(5));
        accepted = !frames.empty() && is_watch(frames.back());
        if (!accepted) std::this_thread::sleep_for(milliseconds(100));
    }
    CHECK(accepted);
}

TEST_CASE("MaxConcurrentQueries counts idle connections and streams", "[stream]") {
    QueryEnv env(fast_commits({{"MaxConcurrentQueries", 3}}));
    WireClient stream(env.socket());
    REQUIRE(stream.send_query("EVENTS STREAM"));
    REQUIRE(!stream.read_reply(seconds(10)).empty());
    WireClient idle1(env.socket());
    WireClient idle2(env.socket());
    // Once eventd has accepted both idle connections, a query is refused (before that, one may
    // still get the third slot: asked again until the refusal, which must come).
    RunResult refused;
    CHECK(test_support::eventually([&] { return (refused = env.query("EVENTS app.login COUNT")).exit_code != 0; }));
    CHECK(refused.exit_code == 1);
    CHECK(refused.out.empty());
    CHECK(refused.err.find("too many concurrent queries") != std::string::npos);
    CHECK(refused.err.find("from this user") == std::string::npos);
}

TEST_CASE("MaxQueriesPerUser limits one non-root user; root is exempt", "[stream]") {
    ensure_test_users();
    QueryEnv env(fast_commits({{"MaxQueriesPerUser", 2}}));
    const auto nobody = lookup_user("nobody");
    REQUIRE(nobody);
    // Two streams held open by `nobody` (nothing visible to it: empty initial result, then watch).
    Child first(env.query_argv("EVENTS STREAM", nobody));
    Child second(env.query_argv("EVENTS STREAM", nobody));
    RunResult third;
    const auto deadline = std::chrono::steady_clock::now() + seconds(10);
    do {
        std::this_thread::sleep_for(milliseconds(100));
        third = env.query("EVENTS COUNT", nobody);
    } while (third.exit_code == 0 && std::chrono::steady_clock::now() < deadline);
    INFO("stderr: " << third.err << " first: " << first.err_so_far() << " second: " << second.err_so_far());
    CHECK(third.exit_code == 1);
    CHECK(third.out.empty());
    CHECK(third.err.find("too many concurrent queries from this user") != std::string::npos);
    // Root is exempt, even with more connections than the per-user limit.
    WireClient a(env.socket()), b(env.socket()), c(env.socket());
    CHECK(count(env, "EVENTS app.login COUNT") == 10);
}

TEST_CASE("QueryTimeoutMs stops a long query with its exact text", "[stream]") {
    // 400,000 rows in a historical shard; grouping them by two payload fields keeps SQLite busy
    // well beyond one second.
    QueryEnv env(EnvOptions{.eventd = {{"QueryTimeoutMs", 1000}}, .filler_rows = 400000});
    const auto start = std::chrono::steady_clock::now();
    const RunResult r = env.query("EVENTS filler.row WHERE s CONTAINS \"row\" GROUP s, i COUNT SORT s DESC TAKE 1",
                                  std::nullopt, "jsonl", seconds(30));
    const auto took = std::chrono::steady_clock::now() - start;
    INFO("exit " << r.exit_code << " stderr " << r.err << " after "
                 << std::chrono::duration_cast<milliseconds>(took).count() << " ms");
    CHECK(r.exit_code == 1);
    CHECK(r.out.empty());
    CHECK(r.err.find("query timed out after 1000 ms (QueryTimeoutMs)") != std::string::npos);
    CHECK(took < seconds(10));  // a bound at 10 × QueryTimeoutMs; the text above says it timed out
    // The server is fine afterwards.
    const RunResult after = env.query("EVENTS app.login COUNT");
    INFO("after: exit " << after.exit_code << " stdout " << after.out << " stderr " << after.err);
    CHECK(after.out == "{\"count\":10}\n");
}

using kmes::it::fds_below;
using kmes::it::open_fds;
using kmes::it::open_sockets;

bool has_new_socket(pid_t pid, const std::set<std::string>& before) {
    for (const std::string& s : open_sockets(pid))
        if (!before.count(s)) return true;
    return false;
}

TEST_CASE("out of file descriptors at stream set-up: the stream fails with a clear error, ingestion goes on",
          "[stream]") {
    QueryEnv env(fast_commits({{"MaxConcurrentQueries", 4096}, {"QueryTimeoutMs", 60000}}));
    const pid_t pid = env.eventd().pid();
    const std::set<std::string> idle_sockets = open_sockets(pid);
    REQUIRE(!idle_sockets.empty());
    WireClient stream(env.socket());  // accepted while descriptors remain; the query comes later
    REQUIRE(test_support::eventually([&] { return has_new_socket(pid, idle_sockets); }, seconds(5), milliseconds(10)));
    const std::vector<int> held = open_fds(pid);

    // Lower eventd's soft RLIMIT_NOFILE to a little above its highest descriptor, then fill the
    // free numbers with idle connections (each one accepted costs eventd a descriptor) until
    // every number below the limit is taken and accept fails.
    rlimit limit{};
    REQUIRE(prlimit(pid, RLIMIT_NOFILE, nullptr, &limit) == 0);
    const rlimit saved = limit;
    limit.rlim_cur = rlim_t(*std::max_element(held.begin(), held.end())) + 1 + 8;
    REQUIRE(prlimit(pid, RLIMIT_NOFILE, &limit, nullptr) == 0);
    std::vector<std::unique_ptr<WireClient>> idle;
    const auto fill_deadline = std::chrono::steady_clock::now() + seconds(15);
    while (fds_below(pid, limit.rlim_cur) < limit.rlim_cur && std::chrono::steady_clock::now() < fill_deadline) {
        if (idle.size() < limit.rlim_cur) idle.push_back(std::make_unique<WireClient>(env.socket()));
        std::this_thread::sleep_for(milliseconds(10));
    }
    INFO("eventd holds " << fds_below(pid, limit.rlim_cur) << " descriptors below its soft limit " << limit.rlim_cur);
    REQUIRE(fds_below(pid, limit.rlim_cur) == limit.rlim_cur);

    // The stream cannot get its wake-up eventfd: its query fails, with the reason.
    REQUIRE(stream.send_query("EVENTS STREAM app.login COUNT"));
    const auto frames = stream.read_reply(seconds(10));
    INFO(json(frames).dump());
    REQUIRE(!frames.empty());
    REQUIRE(frames.back().value("status", "") == "error");
    const std::string error = frames.back().value("error", "");
    CHECK(error.find("cannot start this stream") != std::string::npos);
    CHECK(error.find("out of file descriptors") != std::string::npos);

    // Ingestion goes on while descriptors are still exhausted: these events are stored (read
    // from the shard files directly: no query can connect now).
    for (int i = 0; i < 5; ++i) emit("fd.after", {{"i", i}});
    CHECK(
        test_support::eventually([&] { return eventd::it::read_store(env.store()).of_type("fd.after").size() == 5; }));
    CHECK(kmes::it::process_state(pid) != '?');
    idle.clear();  // descriptors back, so the check below can connect
    REQUIRE(prlimit(pid, RLIMIT_NOFILE, &saved, nullptr) == 0);
    CHECK(await_count(env, "EVENTS fd.after COUNT", 5, seconds(10)) == 5);
    CHECK(kmes::it::process_state(pid) != '?');
}

TEST_CASE("eventd shutting down ends open streams with \"eventd is shutting down\"", "[stream]") {
    QueryEnv env(fast_commits());
    WireClient raw(env.socket());
    REQUIRE(raw.send_query("EVENTS STREAM app.login COUNT"));
    const auto frames = raw.read_reply(seconds(10));
    REQUIRE(!frames.empty());
    REQUIRE(is_watch(frames.back()));
    Child eventctl(env.query_argv("EVENTS bulk.tick WHERE i == 24 SELECT i STREAM"));
    REQUIRE(eventctl.read_line(seconds(10)) == R"({"i":24})");

    env.stop_eventd();
    auto last = raw.read_frame(seconds(10));
    REQUIRE(last);
    CHECK(*last == json({{"status", "error"}, {"error", "eventd is shutting down"}}));
    CHECK(raw.wait_closed(seconds(5)));
    const RunResult r = eventctl.finish(seconds(10));
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("eventd is shutting down") != std::string::npos);
}

}  // namespace
}  // namespace eventd::query_it
