// Backpressure (PSD-008 §2.3.4, DESIGN.md §3.5): a slowed writer — the test-only
// EVENTD_TEST_COMMIT_DELAY_FILE (eventd/test_hooks.hpp, builds with sync points only) makes
// every COMMIT wait 200 ms — with MaxBatchSize 100 commits at most ~500 events/s, against
// 4000/s emitted. The handoff fills, the drain thread stops reading, the 64 KiB ring absorbs
// and then overwrites: the loss shows up as ring-overwrite gaps, and never as anything eventd
// dropped (no failed batch, exact accounting). Removing the delay while eventd runs lets it
// catch up.
#include <signal.h>
#include <stdlib.h>

#include <fstream>
#include <regex>
#include <thread>

#include <catch2/catch.hpp>

#include "commit_delay.hpp"
#include "pipeline.hpp"

using namespace eventd::it;

namespace {

uint64_t stored_kmes_rows(const std::string& store, const Guid& boot) {
    uint64_t n = 0;
    for (const StoredRow& r : read_store(store).rows)
        if (!r.synthetic() && r.boot_id == boot) ++n;
    return n;
}

}  // namespace

#ifdef KMES_SYNC_POINTS
TEST_CASE("backpressure: a slow writer pauses the drain; only ring overwrite loses events, never eventd",
          "[backpressure]") {
    const nlohmann::json slow = {{"StorageShards", 1}, {"MaxBatchSize", 100}, {"MaxBatchLatencyMs", 10}};
    Pipeline p(
        {.cpus = 1, .generate = "rate=4000,payload=64", .kmes_config = {{"BufferCapacity", 65536}}, .eventd = slow});
    CommitDelay delay(p.dir() + "/commit-delay-ms", 200);
    const auto started = std::chrono::steady_clock::now();
    p.start_eventd();
    std::this_thread::sleep_for(std::chrono::seconds(3));

    // While the delay is in force: the writer commits ≤ 100 rows per ≥ 200 ms (+ the batch
    // that was open at start), far fewer than were emitted; the rest waits in, then falls out of,
    // the ring.
    const uint64_t emitted_during_delay = p.watch().highest().at(0);
    const uint64_t stored_during_delay = stored_kmes_rows(p.store(), p.boot());
    const auto delayed_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
    INFO("emitted " << emitted_during_delay << ", stored " << stored_during_delay << " in " << delayed_ms
                    << " ms with the delay");
    CHECK(stored_during_delay <= uint64_t(100 * (delayed_ms / 200 + 1)));
    CHECK(stored_during_delay * 3 < emitted_during_delay);
    const uint64_t lost_during_delay = account(read_store(p.store()), p.boot(), p.watch().highest()).lost();
    CHECK(lost_during_delay > 0);  // the paused drain let the ring overwrite

    // The disk gets fast again: eventd catches up with the ring.
    delay.set(0);
    const Highest highest = p.stop_emission();
    std::string status;
    const bool caught_up = wait_accounted(p.store(), p.boot(), highest, std::chrono::seconds(60), &status);
    INFO(status);
    CHECK(caught_up);
    p.eventd().signal(SIGQUIT);  // graceful shutdown with the diagnostic dump
    REQUIRE(p.eventd().wait_exit(std::chrono::seconds(60)));
    const std::string log = p.stop_eventd();

    CHECK(log.find("test-only EVENTD_TEST_COMMIT_DELAY_FILE") != std::string::npos);

    const StoreContents store = read_store(p.store());
    const AccountingReport report = check_accounting(store, p.boot(), highest);
    CHECK(report.lost() > 0);
    for (const GapRecord& g : report.cpus.at(0).gaps) {
        // Ring-overwrite gaps are found by the drain thread, which knows the event before the
        // gap; a failed-batch gap (eventd losing what it read) would carry nil. The only nil is
        // the very start of the boot, overwritten before eventd attached.
        INFO("gap " << g.first << ".." << g.last);
        CHECK((g.last_seen_timestamp.has_value() || g.first == 1));
    }
    INFO(log);
    CHECK(log.find("commit of") == std::string::npos);  // no failed commit, no lost batch
    CHECK(std::regex_search(log,
                            std::regex("shard 0: rows [0-9]+, batches [0-9]+, failed batches 0 \\(0 events lost\\)")));
    CHECK(
        std::regex_search(log, std::regex("cpu 0: events [0-9]+, skipped 0, gaps [1-9][0-9]* \\([1-9][0-9]* lost\\)")));
}
#endif
