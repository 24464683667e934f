// Retention (PSD-008 §3.4): EventRetentionDays removes rows by age, EventRetentionMaxBytes
// bounds the live size of all shards; the
// oldest rows go first, in bounded batches beside the running writers. A reload that tightens
// the limit applies it at once. Deleted rows stay accounted (sequence_state is untouched), so a
// restart never re-ingests them.
#include <signal.h>

#include <algorithm>
#include <set>

#include <catch2/catch.hpp>

#include "pipeline.hpp"
#include "store_fill.hpp"
#include "support/eventually.hpp"

using namespace eventd::it;

namespace {
// Live bytes of every shard: (page_count − freelist_count) × page_size, as retention measures.
uint64_t live_bytes(const std::string& store) {
    uint64_t total = 0;
    for (const std::string& file : shard_files(store)) {
        const std::string path = store + "/" + file;
        auto pages = query_text(path,
                                "SELECT (SELECT page_count FROM pragma_page_count()) - "
                                "(SELECT freelist_count FROM pragma_freelist_count())");
        auto size = query_text(path, "SELECT page_size FROM pragma_page_size()");
        if (pages && size) total += std::stoull(*pages) * std::stoull(*size);
    }
    return total;
}
}  // namespace

TEST_CASE("retention: a tightened EventRetentionMaxBytes deletes the oldest rows until the store fits", "[retention]") {
    Pipeline p({.cpus = 2, .generate = "rate=20000,payload=200"});
    p.start_eventd();
    // Let the store grow well past the limit used below.
    constexpr uint64_t kLimit = 1u << 20;  // 1 MiB
    REQUIRE(test_support::eventually([&] { return live_bytes(p.store()) >= 4 * kLimit; }, std::chrono::seconds(30),
                                     std::chrono::milliseconds(100)));
    const Highest highest = p.stop_emission();  // no more events: the store only shrinks now
    std::string progress;
    REQUIRE(wait_accounted(p.store(), p.boot(), highest, std::chrono::seconds(60), &progress));  // all stored
    const auto before = read_store(p.store());
    const size_t rows_before = before.rows.size();

    p.write_eventd_config({{"EventRetentionMaxBytes", kLimit}});
    p.eventd().signal(SIGHUP);
    const bool fits = test_support::eventually([&] { return live_bytes(p.store()) <= kLimit; },
                                               std::chrono::seconds(30), std::chrono::milliseconds(100));
    {
        INFO("eventd log:\n" << p.eventd().log());
        REQUIRE(fits);
    }
    const auto after = read_store(p.store());
    CHECK(after.rows.size() < rows_before);
    CHECK_FALSE(after.rows.empty());
    // The oldest went first: every remaining KMES row is newer than every deleted one.
    uint64_t oldest_kept = UINT64_MAX;
    for (const StoredRow& r : after.rows)
        if (!r.synthetic()) oldest_kept = std::min(oldest_kept, r.timestamp);
    std::set<std::pair<std::string, int64_t>> kept;
    for (const StoredRow& r : after.rows) kept.insert({r.file, r.id});
    for (const StoredRow& r : before.rows)
        if (!r.synthetic() && !kept.count({r.file, r.id})) CHECK(r.timestamp <= oldest_kept);
    // Deleted rows stay accounted: sequence_state still covers 1..highest on every CPU.
    const auto state = read_sequence_state(p.store());
    for (const auto& [cpu, top] : highest) {
        std::vector<std::pair<uint64_t, uint64_t>> ranges;
        for (const auto& [key, list] : state)
            if (key.first == p.boot() && key.second == cpu) ranges.insert(ranges.end(), list.begin(), list.end());
        std::sort(ranges.begin(), ranges.end());
        uint64_t covered = 0;  // every sequence 1..covered is accounted
        for (auto [first, last] : ranges)
            if (first <= covered + 1) covered = std::max(covered, last);
        INFO("cpu " << cpu);
        CHECK(covered >= top);
    }
    CHECK_THAT(p.stop_eventd(), Catch::Contains("retention deleted"));
}

TEST_CASE("retention: rows older than EventRetentionDays go while eventd runs; younger rows and the accounting stay",
          "[retention]") {
    // PSD-008 §3.4 by age, in the running daemon: 4000 rows 40 days old and 3000 one day old
    // (one made-up boot, sequences 1..7000) in a shard eventd writes, beside its live rows.
    Pipeline p({.cpus = 2, .generate = "rate=200,payload=64", .eventd = {{"EventRetentionDays", 30}}});
    const kmes::Guid old_boot{{0xa1, 0x1d, 0, 0, 0, 0, 0x80, 0, 0x80, 0, 0, 0, 0, 0, 0, 0x01}};
    prefill_shard(p.store(), {.shard = 0, .rows = 4000, .boot = old_boot, .age = std::chrono::hours(24 * 40)});
    prefill_shard(p.store(),
                  {.shard = 0, .rows = 3000, .boot = old_boot, .first_sequence = 4001, .age = std::chrono::hours(24)});
    p.start_eventd();
    auto of_old_boot = [&] {
        size_t n = 0;
        for (const StoredRow& r : read_store(p.store()).rows) n += r.boot_id == old_boot;
        return n;
    };
    const bool deleted = test_support::eventually([&] { return of_old_boot() == 3000; }, std::chrono::seconds(60));
    INFO("eventd log:\n" << p.eventd().log());
    CHECK(deleted);
    const auto after = read_store(p.store());
    const uint64_t cutoff = uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                         std::chrono::system_clock::now().time_since_epoch() - std::chrono::hours(24 * 30))
                                         .count());
    for (const StoredRow& r : after.rows) {
        if (r.boot_id != old_boot) continue;
        CHECK(r.timestamp > cutoff);  // only the young ones are left
    }
    // The deleted rows stay accounted: sequence_state still covers 1..7000 of the old boot.
    const auto state = read_sequence_state(p.store());
    uint64_t covered = 0;
    for (const auto& [key, ranges] : state) {
        if (key.first != old_boot) continue;
        for (auto [first, last] : ranges)
            if (first <= covered + 1) covered = std::max(covered, last);
    }
    CHECK(covered >= 7000);
    // Live events kept flowing meanwhile.
    CHECK(std::any_of(after.rows.begin(), after.rows.end(), [&](const StoredRow& r) { return r.boot_id == p.boot(); }));
    CHECK_THAT(p.stop_eventd(), Catch::Contains("retention deleted"));
}
