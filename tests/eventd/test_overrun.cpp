// Ring overrun (PSD-008 §2.5, §11.1): eventd frozen while the generators fill small rings
// many times over. After the thaw, the drain threads jump to tail_pos and record what the
// shim overwrote as synthetic.gap records with the exact ranges: the gap sits between two
// stored events, its timestamps are theirs, and the accounting stays exact.
#include <catch2/catch.hpp>

#include "pipeline.hpp"
#include "support/eventually.hpp"

using namespace eventd::it;

TEST_CASE("overrun: eventd frozen on 64 KiB rings records the overwritten ranges as exact gaps", "[overrun]") {
    Pipeline p({.cpus = 2,
                .generate = "rate=20000,payload=64",
                .kmes_config = {{"BufferCapacity", 65536}},
                .eventd = {{"StorageShards", 2}}});
    p.start_eventd();
    // eventd has stored events on every ring (a gap then sits between two stored events).
    std::string progress;
    REQUIRE(wait_accounted(p.store(), p.boot(), p.watch().highest(), std::chrono::seconds(30), &progress));

    const uint64_t frozen_at = wall_ns();
    p.eventd().freeze();
    // Frozen until every ring has had 10000 events written, ~23 times what a 64 KiB ring holds
    // (~430): at 20000 events/s about half a second.
    const Highest at_freeze = p.watch().highest();
    REQUIRE(test_support::eventually([&] {
        const Highest now = p.watch().highest();
        for (const auto& [cpu, top] : at_freeze)
            if (now.at(cpu) < top + 10000) return false;
        return true;
    }));
    p.eventd().thaw();
    const uint64_t thawed_at = wall_ns();
    const Highest highest = p.finish();  // waits until eventd accounted for every sequence

    const StoreContents store = read_store(p.store());
    const AccountingReport report = check_accounting(store, p.boot(), highest, /*keep_timestamps=*/true);
    for (const auto& [cpu, a] : report.cpus) {
        INFO("cpu " << cpu << "\n" << report.summary());
        // The freeze: one gap spanning it, far larger than what a 64 KiB ring holds.
        bool spans_freeze = false;
        for (const GapRecord& g : a.gaps) {
            INFO("gap " << g.first << ".." << g.last);
            // Exact: the revealing event is the stored sequence last + 1, the last one seen
            // before the gap is the stored first − 1 (nil only at the start of the boot).
            REQUIRE(a.timestamp_of.count(g.last + 1));
            CHECK(g.revealing_timestamp == a.timestamp_of.at(g.last + 1));
            if (g.first == 1) {
                CHECK_FALSE(g.last_seen_timestamp);
            } else {
                REQUIRE(a.timestamp_of.count(g.first - 1));
                REQUIRE(g.last_seen_timestamp);
                CHECK(*g.last_seen_timestamp == a.timestamp_of.at(g.first - 1));
            }
            CHECK(g.recorded_at >= g.revealing_timestamp);  // noticed after the revealing event was written
            if (g.last_seen_timestamp && *g.last_seen_timestamp <= thawed_at && g.revealing_timestamp >= frozen_at &&
                g.count > 1000)
                spans_freeze = true;
        }
        CHECK(spans_freeze);
    }
    CHECK(report.lost() > 0);
    CHECK(report.stored() > 0);
}
