// Retention's algorithm (store/retention.hpp, PSD-008 §3.4) over real shard files: the age
// step, the size step deleting the globally oldest rows first, batching with exclusive access
// per batch, and stopping.
#include <algorithm>
#include <map>
#include <vector>

#include "store/retention.hpp"
#include "store_test_util.hpp"
#include "support/temp_dir.hpp"

using namespace store_test;
using eventd::store::RetentionLimits;
using eventd::store::RetentionOptions;
using eventd::store::RetentionShards;
using eventd::store::ShardDb;
using test_support::event_row;
using test_support::guid;
using test_support::TempDir;

namespace {

// Shards 0..n-1 in one directory; each with the given timestamps (one row each, ~2 KB payload
// so the size step has pages to measure).
struct Shards {
    TempDir dir;
    std::vector<std::unique_ptr<ShardDb>> dbs;
    std::vector<uint32_t> batches;  // per shard: with_shard calls

    explicit Shards(const std::vector<std::vector<uint64_t>>& timestamps) {
        for (uint32_t i = 0; i < timestamps.size(); ++i) {
            dbs.push_back(open_shard(dir.path(), i));
            REQUIRE(dbs.back()->begin().ok());
            uint64_t seq = 0;
            for (uint64_t ts : timestamps[i]) {
                auto row = event_row({.boot = guid(0xb0), .timestamp = ts, .cpu = uint16_t(i), .sequence = ++seq});
                row.payload = std::vector<uint8_t>(2000, 0x22);
                REQUIRE(dbs.back()->insert(row).ok());
            }
            if (seq) REQUIRE(dbs.back()->account(guid(0xb0), uint16_t(i), 1, seq).ok());
            REQUIRE(dbs.back()->commit().ok());
        }
        batches.assign(dbs.size(), 0);
    }

    RetentionShards view() {
        return RetentionShards{uint32_t(dbs.size()), [this](uint32_t i, const std::function<void(ShardDb&)>& f) {
                                   ++batches[i];
                                   f(*dbs[i]);
                               }};
    }

    std::vector<uint64_t> timestamps(uint32_t i) {
        RawDb raw(dir / eventd::store::shard_file_name(i));
        std::vector<uint64_t> out;
        for (const auto& row : raw.rows("SELECT timestamp FROM events ORDER BY timestamp"))
            out.push_back(std::stoull(row[0]));
        return out;
    }

    uint64_t used_bytes() {
        uint64_t sum = 0;
        for (auto& db : dbs) sum += db->used_bytes();
        return sum;
    }
};

RetentionOptions no_pause() {
    RetentionOptions o;
    o.pause = std::chrono::milliseconds(0);
    return o;
}

}  // namespace

TEST_CASE("age step: every shard loses exactly its rows older than the cutoff", "[retention_run]") {
    Shards s({{1, 5, 10, 20}, {2, 30}, {}});
    const auto outcome = eventd::store::run_retention(s.view(), RetentionLimits{.cutoff_ns = 10}, no_pause());
    CHECK(outcome.deleted == 3);
    CHECK_FALSE(outcome.stopped);
    CHECK(s.timestamps(0) == std::vector<uint64_t>{10, 20});
    CHECK(s.timestamps(1) == std::vector<uint64_t>{30});
    CHECK(s.timestamps(2).empty());
}

TEST_CASE("age step: bounded batches, each one call of exclusive access", "[retention_run]") {
    Shards s({{1, 2, 3, 4, 5, 6, 7}});
    RetentionOptions o = no_pause();
    o.batch = 3;
    const auto outcome = eventd::store::run_retention(s.view(), RetentionLimits{.cutoff_ns = 100}, o);
    CHECK(outcome.deleted == 7);
    CHECK(s.batches[0] == 3);  // 3 + 3 + 1 (short batch: done)
    CHECK(s.timestamps(0).empty());
}

TEST_CASE("no limits: nothing is deleted", "[retention_run]") {
    Shards s({{1, 2}, {3}});
    const auto outcome = eventd::store::run_retention(s.view(), RetentionLimits{}, no_pause());
    CHECK(outcome.deleted == 0);
    CHECK(s.timestamps(0).size() == 2);
}

TEST_CASE("size step: the globally oldest rows go first, across shards, until the pages fit", "[retention_run]") {
    // Interleaved timestamps: a per-shard order would delete 1, 3, 5 of shard 0 first.
    Shards s({{1, 3, 5, 7, 9, 11, 13, 15}, {2, 4, 6, 8, 10, 12, 14, 16}});
    const uint64_t before = s.used_bytes();
    // Room for about half of the rows: the survivors must be exactly the newest ones.
    const uint64_t limit = before - 8 * 2100;
    const auto outcome = eventd::store::run_retention(s.view(), RetentionLimits{.max_bytes = limit}, no_pause());
    CHECK(outcome.deleted > 0);
    CHECK(s.used_bytes() <= limit);
    std::vector<uint64_t> left = s.timestamps(0);
    const auto other = s.timestamps(1);
    left.insert(left.end(), other.begin(), other.end());
    std::sort(left.begin(), left.end());
    REQUIRE(!left.empty());
    // No row survives while an older one was deleted: the survivors are a suffix of 1..16.
    CHECK(left.back() == 16);
    CHECK(left.size() == 16 - outcome.deleted);
    CHECK(left.front() == outcome.deleted + 1);
}

TEST_CASE("size step: a limit nothing can meet empties the shards and stops", "[retention_run]") {
    Shards s({{1, 2}, {3}});
    const auto outcome = eventd::store::run_retention(s.view(), RetentionLimits{.max_bytes = 1}, no_pause());
    CHECK(outcome.deleted == 3);
    CHECK(s.timestamps(0).empty());
    CHECK(s.timestamps(1).empty());
}

TEST_CASE("should_stop ends the run before the next batch", "[retention_run]") {
    Shards s({{1, 2, 3, 4, 5, 6}});
    RetentionOptions o = no_pause();
    o.batch = 2;
    int calls = 0;
    o.should_stop = [&] { return ++calls > 1; };  // one batch, then stop
    const auto outcome = eventd::store::run_retention(s.view(), RetentionLimits{.cutoff_ns = 100}, o);
    CHECK(outcome.stopped);
    CHECK(outcome.deleted == 2);
    CHECK(s.timestamps(0).size() == 4);
}

TEST_CASE("retention_cutoff is now minus the days, and 0 before the epoch", "[retention_run]") {
    constexpr uint64_t kDay = 86'400ull * 1'000'000'000ull;
    CHECK(eventd::store::retention_cutoff(10 * kDay, 3) == 7 * kDay);
    CHECK(eventd::store::retention_cutoff(10 * kDay, 10) == 0);
    CHECK(eventd::store::retention_cutoff(10 * kDay, 3650) == 0);
}
