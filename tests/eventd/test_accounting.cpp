// Exact accounting over more than a million events on four rings (issue 3, DESIGN.md §3.1–3.2):
// once emission stops and eventd has caught up, every sequence 1..highest of every CPU is a
// stored row or inside exactly one gap record, nothing is stored twice, and the shutdown
// record reports the highest persisted sequences.
#include <fstream>
#include <set>

#include <catch2/catch.hpp>

#include "base/guid_text.hpp"
#include "pipeline.hpp"
#include "support/eventually.hpp"

using namespace eventd::it;

namespace {

constexpr uint64_t kEvents = 1'000'000;
// Generator events: 29-byte header + "demo.event" + 48 bytes of identity + 64-byte payload;
// counting 160 bytes per event under-estimates the count, so emission runs long enough.
constexpr uint64_t kBytesPerEventAtMost = 160;

void run_until_emitted(Pipeline& p, uint64_t events) {
    REQUIRE(test_support::eventually(
        [&] {
            if (p.watch().bytes_written() / kBytesPerEventAtMost >= events) return true;
            REQUIRE(p.eventd().running());
            return false;
        },
        std::chrono::seconds(60), std::chrono::milliseconds(100)));
}

std::string os_boot_id() {
    std::ifstream in("/proc/sys/kernel/random/boot_id");
    std::string id;
    std::getline(in, id);
    return id;
}

// Rows of each CPU land only in the shards it owns (DESIGN.md §8).
std::map<uint16_t, std::set<std::string>> shards_used(const StoreContents& store) {
    std::map<uint16_t, std::set<std::string>> used;
    for (const StoredRow& r : store.rows)
        if (!r.synthetic() && r.cpu_id) used[*r.cpu_id].insert(r.file);
    return used;
}

std::string shard_name(uint32_t index) {
    char name[32];
    std::snprintf(name, sizeof name, "shard-%04u.db", index);
    return name;
}

// The run shared by both shard counts: 4 rings, the generator at 50k events/s per ring.
void exact_accounting_run(uint32_t shards) {
    Pipeline p({.cpus = 4, .generate = "rate=50000,payload=64", .eventd = {{"StorageShards", shards}}});
    p.start_eventd();
    run_until_emitted(p, kEvents);
    const Highest highest = p.finish();

    const StoreContents store = read_store(p.store());
    REQUIRE(store.unreadable.empty());
    const AccountingReport report = check_accounting(store, p.boot(), highest);
    uint64_t emitted = 0;
    for (const auto& [cpu, top] : highest) emitted += top;
    INFO(report.summary());
    CHECK(emitted >= kEvents);
    CHECK(highest.size() == 4);
    // What the product does at 200k events/s on two cores: it stores what it can drain and
    // accounts every other event in gap records — exactly, whatever the share (alone it stores
    // most; beside other tests or under a sanitizer, 5-15x slower, less; TSan stored 23 %). How
    // fast it drains is a benchmark's to measure (./scripts/bench, docs/PERFORMANCE.md), not a
    // test's. What this test needs is that the exactness above covered real work on every
    // ring: stored rows on each (all 1.07 million of them here, run alone). Gaps may or may not come —
    // eventd keeps up at this rate when it has the cores — and their exactness under a sure
    // overrun is eventd-overrun's.
    for (const auto& [cpu, account] : report.cpus) {
        INFO("cpu " << cpu);
        CHECK(account.stored >= 1000);
    }
    check_sequence_state(p.store(), p.boot(), highest);

    std::vector<std::string> expected_files;
    for (uint32_t s = 0; s < shards; ++s) expected_files.push_back(shard_name(s));
    CHECK(store.files == expected_files);
    for (const auto& [cpu, files] : shards_used(store)) {
        INFO("cpu " << cpu);
        if (shards < 4) {
            CHECK(files == std::set<std::string>{shard_name(cpu % shards)});
        } else {
            std::set<std::string> owned;
            for (uint32_t s = cpu; s < shards; s += 4) owned.insert(shard_name(s));
            CHECK(files == owned);  // round-robin in runs: more than one run per CPU here
        }
    }

    const auto startups = store.of_type("synthetic.startup");
    REQUIRE(startups.size() == 1);
    const auto& startup = startups[0].payload;
    CHECK(startups[0].file == "shard-0000.db");
    CHECK(startup["boot_id"] == base::guid_text(p.boot()));
    CHECK(startup["os_boot_id"] == os_boot_id());
    CHECK(startup["restart"] == false);
    CHECK(startup["shard_count"] == shards);
    CHECK(startup["resume_points"] == nlohmann::json::parse(R"([{"cpu_id":0,"sequence":0},{"cpu_id":1,"sequence":0},
                                                               {"cpu_id":2,"sequence":0},{"cpu_id":3,"sequence":0}])"));

    const auto shutdowns = store.of_type("synthetic.shutdown");
    REQUIRE(shutdowns.size() == 1);
    CHECK(shutdowns[0].file == "shard-0000.db");
    CHECK(shutdowns[0].payload.size() == 1);
    nlohmann::json last = nlohmann::json::array();
    for (const auto& [cpu, top] : highest) last.push_back({{"cpu_id", cpu}, {"sequence", top}});
    CHECK(shutdowns[0].payload["last_sequences"] == last);  // caught up: the highest of each ring
    CHECK(shutdowns[0].timestamp >= startups[0].timestamp);
}

}  // namespace

TEST_CASE("accounting: a million events from 4 CPUs into 2 shards are each stored once or inside a gap",
          "[accounting]") {
    exact_accounting_run(2);
}

TEST_CASE("accounting: a million events from 4 CPUs into 8 shards (two per CPU) are each stored once or inside a gap",
          "[accounting]") {
    exact_accounting_run(8);
}
