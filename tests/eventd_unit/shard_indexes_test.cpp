// The decisions of index convergence and shedding (eventd/index/shard_indexes.hpp), with an
// explicit clock: PSD-008 §3.3.3–§3.3.5.
#include <catch2/catch.hpp>

#include "eventd/index/shard_indexes.hpp"

using eventd::index::DesiredIndex;
using eventd::index::DesiredSet;
using eventd::index::IndexStep;
using eventd::index::SheddingSettings;
using eventd::index::ShardIndexes;
using Outcome = ShardIndexes::Outcome;
using Clock = ShardIndexes::Clock;
using std::chrono::seconds;

namespace {

DesiredSet desired(std::vector<DesiredIndex> indexes) {
    DesiredSet set;
    set.indexes = std::move(indexes);
    set.version = 1;
    return set;
}

const DesiredIndex kUser{"user", true};
const DesiredIndex kType{"event_type", false};
const DesiredIndex kSource{"source.name", true};

}  // namespace

TEST_CASE("convergence builds the most important missing index first, and drops what left the set", "[indexes]") {
    const auto t0 = Clock::now();
    ShardIndexes shard({"idx_events_cpu_id"});
    const DesiredSet set = desired({kUser, kType});

    auto step = shard.next_quiet_step(set, t0);
    REQUIRE(step);
    CHECK(step->kind == IndexStep::Kind::drop);  // drops come first: fast, and free disk
    CHECK(step->name == "idx_events_cpu_id");
    CHECK(step->sql == "DROP INDEX IF EXISTS idx_events_cpu_id");
    shard.done(*step, Outcome::done, t0);

    step = shard.next_quiet_step(set, t0);
    REQUIRE(step);
    CHECK(step->kind == IndexStep::Kind::create);
    CHECK(step->name == "idx_events_payload_user");
    CHECK(step->sql ==
          "CREATE INDEX IF NOT EXISTS idx_events_payload_user ON events(msgpack_extract(payload, '$.user') COLLATE NOCASE, "
          "timestamp)");
    shard.done(*step, Outcome::done, t0);

    step = shard.next_quiet_step(set, t0);
    REQUIRE(step);
    CHECK(step->sql == "CREATE INDEX IF NOT EXISTS idx_events_event_type ON events(event_type COLLATE NOCASE, timestamp)");
    shard.done(*step, Outcome::done, t0);
    CHECK_FALSE(shard.next_quiet_step(set, t0));
    CHECK(shard.missing(set).empty());
    CHECK(shard.counters().builds_done == 2);
    CHECK(shard.counters().dropped == 1);
}

TEST_CASE("§3.3.7 names; fields that cannot be indexed are never built", "[indexes]") {
    const auto t0 = Clock::now();
    ShardIndexes shard({});
    const DesiredSet set = desired({{"timestamp", false}, {"payload", false}, {"sequence", false}, {"a..b", true},
                                    {"x'y", true}, kSource});
    auto step = shard.next_quiet_step(set, t0);
    REQUIRE(step);
    CHECK(step->name == "idx_events_payload_source_name");
    CHECK(shard.missing(set) == std::vector<std::string>{"idx_events_payload_source_name"});
    // The fixed timestamp index is never dropped, whatever the shard lists.
    ShardIndexes with_timestamp({"idx_events_timestamp"});
    CHECK_FALSE(with_timestamp.next_quiet_step(desired({}), t0));
}

TEST_CASE("a cancelled build is retried later, backing off while builds keep being cancelled", "[indexes]") {
    const auto t0 = Clock::now();
    ShardIndexes shard({});
    const DesiredSet set = desired({kUser});
    auto step = shard.next_quiet_step(set, t0);
    REQUIRE(step);
    shard.done(*step, Outcome::cancelled, t0);
    CHECK(shard.counters().builds_cancelled == 1);
    CHECK_FALSE(shard.next_quiet_step(set, t0 + std::chrono::milliseconds(500)));
    REQUIRE(shard.next_quiet_step(set, t0 + seconds(1)));
    shard.done(*step, Outcome::cancelled, t0 + seconds(1));
    CHECK_FALSE(shard.next_quiet_step(set, t0 + seconds(2)));  // now 2 s
    REQUIRE(shard.next_quiet_step(set, t0 + seconds(3)));
    shard.done(*step, Outcome::done, t0 + seconds(3));
    CHECK(shard.material().contains("idx_events_payload_user"));
}

TEST_CASE("graduated shedding drops the lowest-priority index while most batches are large", "[indexes]") {
    const auto t0 = Clock::now();
    ShardIndexes shard({"idx_events_payload_user", "idx_events_event_type", "idx_events_payload_source_name"});
    const DesiredSet set = desired({kUser, kType, kSource});
    const SheddingSettings settings{30, 75};
    const uint32_t max_batch = 1000;

    // Small batches: no pressure.
    for (int i = 0; i < 10; ++i) CHECK_FALSE(shard.on_commit(100, max_batch, settings, set, t0));
    // 75 % of MaxBatchSize is not "above 75 %"; 751 is.
    CHECK_FALSE(shard.on_commit(750, max_batch, settings, set, t0));
    // Large batches until more than 75 % of the window's batches are large: 11 small so far,
    // so the 34th large one (34 of 45 > 75 %) triggers.
    std::optional<IndexStep> step;
    int large = 0;
    while (!step && large < 100) {
        step = shard.on_commit(751, max_batch, settings, set, t0 + seconds(1));
        ++large;
    }
    REQUIRE(step);
    CHECK(large == 34);
    CHECK(step->kind == IndexStep::Kind::drop);
    CHECK(step->name == "idx_events_payload_source_name");  // last in the desired set
    CHECK(step->why == IndexStep::Why::graduated_shedding);
    shard.done(*step, Outcome::done, t0 + seconds(1));
    // Pressure lasts: the next-lowest at the next commit.
    step = shard.on_commit(1000, max_batch, settings, set, t0 + seconds(2));
    REQUIRE(step);
    CHECK(step->name == "idx_events_event_type");
    shard.done(*step, Outcome::done, t0 + seconds(2));
    CHECK(shard.counters().sheds_graduated == 2);

    // No restore while the pressure is recent (§3.3.5) …
    CHECK_FALSE(shard.next_quiet_step(set, t0 + seconds(10)));
    // … then the most important shed index first, counted as a restore.
    step = shard.next_quiet_step(set, t0 + seconds(33));
    REQUIRE(step);
    CHECK(step->name == "idx_events_event_type");
    CHECK(step->why == IndexStep::Why::restore);
    shard.done(*step, Outcome::done, t0 + seconds(33));
    CHECK(shard.counters().restored == 1);
}

TEST_CASE("the shedding window forgets old batches", "[indexes]") {
    const auto t0 = Clock::now();
    ShardIndexes shard({"idx_events_payload_user"});
    const DesiredSet set = desired({kUser});
    const SheddingSettings settings{10, 50};
    for (int i = 0; i < 10; ++i) CHECK_FALSE(shard.on_commit(10, 1000, settings, set, t0));
    // 60 s later the small batches are out of the window: one large batch is 100 %.
    CHECK(shard.on_commit(900, 1000, settings, set, t0 + seconds(60)));
}

TEST_CASE("emergency shedding drops every secondary index at once", "[indexes]") {
    const auto t0 = Clock::now();
    ShardIndexes shard({"idx_events_payload_user", "idx_events_event_type"});
    const DesiredSet set = desired({kUser, kType});
    const auto steps = shard.emergency(SheddingSettings{30, 75}, t0);
    REQUIRE(steps.size() == 2);
    for (const IndexStep& s : steps) {
        CHECK(s.kind == IndexStep::Kind::drop);
        CHECK(s.why == IndexStep::Why::emergency_shedding);
        shard.done(s, Outcome::done, t0);
    }
    CHECK(shard.material().empty());
    CHECK(shard.counters().sheds_emergency == 2);
    CHECK_FALSE(shard.next_quiet_step(set, t0 + seconds(29)));
    auto step = shard.next_quiet_step(set, t0 + seconds(31));
    REQUIRE(step);
    CHECK(step->name == "idx_events_payload_user");
}
