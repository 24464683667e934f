// The lock-rank check (eventd/lock_order.hpp): increasing ranks pass; taking a lower or equal
// rank while holding a higher one aborts the process, naming both locks. Death tests run in a
// forked child. Only debug builds check (with NDEBUG RankedMutex is a plain std::mutex).
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>

#include "eventd/common/lock_order.hpp"

#ifndef NDEBUG
namespace {

using eventd::LockRank;
using eventd::RankedMutex;

struct Death {
    bool aborted = false;
    std::string stderr_text;
};

// Run `f` in a forked child with stderr captured; did it die by SIGABRT?
Death run_in_child(const std::function<void()>& f) {
    int pipe_fds[2];
    REQUIRE(pipe(pipe_fds) == 0);
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        signal(SIGABRT, SIG_DFL);  // die by the signal, not through Catch's fatal-condition handler
        dup2(pipe_fds[1], STDERR_FILENO);
        close(pipe_fds[0]);
        f();
        _exit(0);
    }
    close(pipe_fds[1]);
    Death d;
    char buf[512];
    for (ssize_t n; (n = read(pipe_fds[0], buf, sizeof buf)) > 0;) d.stderr_text.append(buf, size_t(n));
    close(pipe_fds[0]);
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    d.aborted = WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
    return d;
}

}  // namespace

TEST_CASE("lock order: increasing ranks, nested and repeated, pass", "[lock_order]") {
    const Death d = run_in_child([] {
        RankedMutex config(LockRank::config), shard(LockRank::shard_db), urgent(LockRank::urgent);
        for (int i = 0; i < 3; ++i) {
            std::lock_guard a(config);
            std::lock_guard b(shard);
            std::lock_guard c(urgent);
        }
        std::lock_guard b(shard);  // after releasing the higher ones, a lower one is fine again
    });
    INFO(d.stderr_text);
    CHECK_FALSE(d.aborted);
}

TEST_CASE("lock order: a lower rank taken while holding a higher one aborts, naming both", "[lock_order]") {
    const Death d = run_in_child([] {
        RankedMutex shard(LockRank::shard_db), retention(LockRank::retention);
        std::lock_guard a(shard);
        std::lock_guard b(retention);  // the cycle the old on_storage_error could close
    });
    CHECK(d.aborted);
    CHECK_THAT(d.stderr_text,
               Catch::Contains("lock order violation") && Catch::Contains("retention") && Catch::Contains("db_mutex_"));
}

TEST_CASE("lock order: two locks of one rank (two shards) are never held together", "[lock_order]") {
    const Death d = run_in_child([] {
        RankedMutex shard0(LockRank::shard_db), shard1(LockRank::shard_db);
        std::lock_guard a(shard0);
        std::lock_guard b(shard1);
    });
    CHECK(d.aborted);
}

TEST_CASE("lock order: a condition_variable_any wait releases and retakes the rank", "[lock_order]") {
    const Death d = run_in_child([] {
        RankedMutex retention(LockRank::retention);
        std::condition_variable_any cv;
        std::unique_lock lock(retention);
        cv.wait_for(lock, std::chrono::milliseconds(1));
        lock.unlock();
        RankedMutex config(LockRank::config);
        std::lock_guard a(config);  // nothing held any more
    });
    INFO(d.stderr_text);
    CHECK_FALSE(d.aborted);
}
#endif
