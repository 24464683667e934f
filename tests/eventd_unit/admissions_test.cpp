// Admissions' running slots (MaxRunningQueriesPerUser, issue 40): a user who is not an
// administrator has at most the limit of queries reading the store at once, the rest wait;
// administrators never wait; a wait ends at the query's deadline or at shutdown. The stress
// case races many threads of three users over the slots (run under TSan in the unit suite).
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>
#include <vector>

#include "eventd/server/admissions.hpp"

namespace {

using namespace eventd::server;
using Clock = std::chrono::steady_clock;

ServerLimits limits_of(uint32_t running) {
    ServerLimits l;
    l.max_running_queries_per_user = running;
    return l;
}

}  // namespace

TEST_CASE("running slots: the limit per user holds under a race of three users' threads", "[admissions][stress]") {
    Admissions admissions;
    QueryCounters counters;
    const ServerLimits limits = limits_of(2);
    const std::atomic<bool> stopping{false};
    constexpr int kUsers = 3, kThreadsPerUser = 6, kRounds = 300;
    std::atomic<int> holding[kUsers] = {};
    std::atomic<int> most[kUsers] = {};
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int user = 0; user < kUsers; ++user) {
        for (int t = 0; t < kThreadsPerUser; ++t) {
            threads.emplace_back([&, user] {
                const uid_t uid = static_cast<uid_t>(1000 + user);
                for (int round = 0; round < kRounds; ++round) {
                    auto slot = admissions.run_slot(uid, false, limits, Clock::now() + std::chrono::seconds(60),
                                                    stopping, counters);
                    if (!slot) {
                        failures.fetch_add(1);
                        continue;
                    }
                    // The slot's mutex orders these with the other holders' (acquire on lock,
                    // release on unlock): relaxed is enough for the counts themselves.
                    const int now = holding[user].fetch_add(1, std::memory_order_relaxed) + 1;
                    int seen = most[user].load(std::memory_order_relaxed);
                    while (now > seen && !most[user].compare_exchange_weak(seen, now, std::memory_order_relaxed)) {}
                    std::this_thread::yield();
                    holding[user].fetch_sub(1, std::memory_order_relaxed);
                }
            });
        }
    }
    for (auto& t : threads) t.join();
    CHECK(failures.load() == 0);
    for (int user = 0; user < kUsers; ++user) {
        INFO("user " << user);
        CHECK(most[user].load() <= 2);
        CHECK(most[user].load() >= 1);
        CHECK(holding[user].load() == 0);
    }
    // Every slot came back: each user can take the limit again at once.
    for (int user = 0; user < kUsers; ++user) {
        auto a = admissions.run_slot(static_cast<uid_t>(1000 + user), false, limits, Clock::now(), stopping, counters);
        auto b = admissions.run_slot(static_cast<uid_t>(1000 + user), false, limits, Clock::now(), stopping, counters);
        CHECK((a.ok() && b.ok()));
    }
}

TEST_CASE("running slots: a waiter is let in when a slot is released, times out at its deadline, ends at shutdown",
          "[admissions]") {
    Admissions admissions;
    QueryCounters counters;
    const ServerLimits limits = limits_of(1);
    std::atomic<bool> stopping{false};
    auto held = admissions.run_slot(65534, false, limits, Clock::now(), stopping, counters);
    REQUIRE(held.ok());

    SECTION("an administrator does not wait behind the user's query, nor counts") {
        auto admin = admissions.run_slot(65534, true, limits, Clock::now(), stopping, counters);
        CHECK(admin.ok());
        CHECK(counters.waited_running_per_user.load() == 0);
    }
    SECTION("another user does not wait either") {
        CHECK(admissions.run_slot(1000, false, limits, Clock::now(), stopping, counters).ok());
        CHECK(counters.waited_running_per_user.load() == 0);
    }
    SECTION("the deadline ends the wait, in the words of the limit") {
        const auto started = Clock::now();
        auto waited =
            admissions.run_slot(65534, false, limits, started + std::chrono::milliseconds(200), stopping, counters);
        REQUIRE_FALSE(waited.ok());
        CHECK(waited.error().code == base::ErrorCode::timed_out);
        CHECK(waited.error().message == "waited for 1 other queries of this user to finish (MaxRunningQueriesPerUser)");
        CHECK(Clock::now() - started >= std::chrono::milliseconds(200));
        CHECK(counters.waited_running_per_user.load() == 1);
    }
    SECTION("a release lets the waiter in") {
        std::atomic<bool> got{false};
        std::thread waiter([&] {
            auto slot =
                admissions.run_slot(65534, false, limits, Clock::now() + std::chrono::seconds(30), stopping, counters);
            got.store(slot.ok());
        });
        // Released only once the waiter is counted as waiting: it must have been let in by it.
        while (counters.waited_running_per_user.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        { auto released = std::move(*held); }
        waiter.join();
        CHECK(got.load());
    }
    SECTION("shutdown ends the wait") {
        std::optional<base::Result<Admissions::RunSlot>> waited;
        std::thread waiter([&] {
            waited.emplace(
                admissions.run_slot(65534, false, limits, Clock::now() + std::chrono::seconds(30), stopping, counters));
        });
        while (counters.waited_running_per_user.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        stopping.store(true);
        waiter.join();
        REQUIRE(waited);
        REQUIRE_FALSE(waited->ok());
        CHECK(waited->error().code == base::ErrorCode::cancelled);
    }
}
