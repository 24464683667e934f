// [watchdog]: WATCHDOG=1 only while eventd makes progress (issue 40, docs/EVENTD.md §11). eventd
// runs with systemd's watchdog on (WATCHDOG_USEC 2 s, as systemd sets it for WatchdogSec=2s),
// pinging the test's NOTIFY_SOCKET; then its shard writer is held in one COMMIT for 6 s (the
// test-only commit delay) while events keep coming. The pings stop within the limit (half the
// interval) — under systemd that is a restart — and resume once the commit returns.
#include <chrono>
#include <string>

#include <catch2/catch.hpp>

#include "commit_delay.hpp"
#include "pipeline.hpp"
#include "support/eventually.hpp"

using namespace eventd::it;

namespace {

size_t pings(EventdProcess& eventd) {
    size_t n = 0;
    for (const std::string& note : eventd.notifications()) n += note.find("WATCHDOG=1") != std::string::npos;
    return n;
}

}  // namespace

TEST_CASE("watchdog: a writer held in a commit stops the pings; they resume with its progress", "[watchdog]") {
    Pipeline p({.cpus = 1, .generate = "rate=500,payload=32"});
    CommitDelay delay(p.dir() + "/commit-delay-ms", 0);
    EventdProcess eventd(p.dir(), p.config_path(), std::chrono::seconds(2));
    std::string why;
    REQUIRE(eventd.wait_ready(&why));
    INFO(why);
    REQUIRE(eventd.wait_notification("WATCHDOG=1", std::chrono::seconds(10), &why));  // healthy: pinged

    delay.set(6000);  // the next COMMIT takes 6 s: the writer has work and no progress
    const auto held = std::chrono::steady_clock::now();
    REQUIRE(eventd.wait_log("watchdog: shard writer 0 has made no progress", std::chrono::seconds(15)));
    const size_t at_stall = pings(eventd);
    CHECK(eventd.notified("STATUS=stalled: shard writer 0"));
    delay.set(0);
    REQUIRE(eventd.wait_log("watchdog: progress again; pings resumed", std::chrono::seconds(30)));
    const auto stall = std::chrono::steady_clock::now() - held;
    const size_t at_resume = pings(eventd);
    INFO("pings at the stall " << at_stall << ", at the resume " << at_resume << ", after "
                               << std::chrono::duration_cast<std::chrono::milliseconds>(stall).count() << " ms");
    // A tick a second: a healthy eventd would have pinged about 4 times meanwhile; the one the
    // resume sent first may be counted.
    CHECK(stall >= std::chrono::seconds(4));
    CHECK(at_resume - at_stall <= 1);
    CHECK(test_support::eventually([&] { return pings(eventd) >= at_resume + 2; }, std::chrono::seconds(10)));
    CHECK(eventd.terminate() == 0);
}
