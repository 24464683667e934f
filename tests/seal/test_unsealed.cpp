// A store without sealing keys (issue 28): eventd says at every start that it is not sealed; its
// rows are chained all the same, so `eventctl verify` finds them intact but sealed by nothing
// (exit 3, every row after the origin unsealed) — and a plain edit still shows in the chain.
#include <random>
#include <string>

#include <catch2/catch.hpp>

#include "eventd/pipeline.hpp"
#include "seal_fixture.hpp"
#include "support/eventually.hpp"
#include "support/store_reader.hpp"
#include "test_seed.hpp"

using namespace eventd::seal_it;

namespace {
constexpr uint32_t kCheckpointIntervalSeconds = 1;
}  // namespace

TEST_CASE("unsealed: without sealing.key eventd warns at startup and verify finds every file chained but unsealed",
          "[unsealed]") {
    std::mt19937_64 rng(test_seed("SEAL_UNSEALED_SEED", "unsealed: the row changed"));
    test_support::TempDir dir;
    const std::string store = dir.str() + "/events";
    // A verification key of another store: nothing here is signed with any.
    const std::string key = setup_sealing(dir.str() + "/other-store");
    eventd::it::Pipeline p({.cpus = 2,
                            .generate = "rate=300,payload=64",
                            .eventd = {{"CheckpointIntervalSeconds", kCheckpointIntervalSeconds}},
                            .store_dir = store});
    p.start_eventd();
    const bool warned = p.eventd().wait_log("is not sealed", std::chrono::seconds(10));
    {
        INFO("eventd log:\n" << p.eventd().log());
        CHECK(warned);
        CHECK_THAT(p.eventd().log(), Catch::Contains("the store in " + store + " is not sealed"));
    }
    // Rows in both shards: a sealing writer seals its first commit.
    REQUIRE(test_support::eventually([&] {
        const auto now = last_ids(store);
        return now.size() == 2 && now.begin()->second > 100 && now.rbegin()->second > 100;
    }));
    // Then it seals its first commit CheckpointIntervalSeconds after that one, the checkpoint
    // row in the same transaction (ShardWriter::commit_batch). Both first commits came before
    // now, so a row the shim stamped (CLOCK_REALTIME) an interval from now or later was
    // committed after a second checkpoint was due. Once each shard holds one, no checkpoint row
    // means none was written, not that none was due yet: a state to wait for, where a sleep
    // could end with eventd stalled and prove nothing.
    const uint64_t due = now_ns() + uint64_t(kCheckpointIntervalSeconds) * 1'000'000'000u;
    auto stamped_since_due = [&] {
        const auto files = active_shards(store);
        if (files.size() != 2) return false;
        for (const std::string& f : files) {
            const auto newest = eventd::it::query_text(
                store + "/" + f,
                "SELECT coalesce(max(timestamp), 0) FROM events WHERE event_type NOT LIKE 'synthetic.%'");
            if (!newest || std::stoull(*newest) < due) return false;
        }
        return true;
    };
    {
        const bool stamped = test_support::eventually(stamped_since_due, std::chrono::seconds(30));
        INFO("no row stamped an interval after both shards' first commits; eventd log:\n"
             << (stamped ? std::string() : p.eventd().log()));
        REQUIRE(stamped);
    }
    p.stop_eventd();

    const auto ids = last_ids(store);
    for (const auto& [file, last] : ids) CHECK(count_checkpoints(store + "/" + file) == 0);
    const VerifyRun v = verify(store, key);
    {
        INFO(v);
        CHECK(v.exit_code == 3);
        CHECK(v.summary == "verify: intact, " + std::to_string(ids.begin()->second + ids.rbegin()->second) +
                               " rows in 2 files; 2 files end with unsealed rows");
        for (const auto& [file, last] : ids) {
            INFO(file);
            const FileVerdict f = v.file(file);
            CHECK(f.status == FileVerdict::Status::unsealed);
            CHECK(f.checkpoints == 0);
            CHECK(f.rows == uint64_t(last));
            CHECK(f.sealed_through == 0);
            CHECK_THAT(f.what, Catch::StartsWith("rows 1.." + std::to_string(last) + " chained but not sealed yet"));
        }
    }

    // The chain alone still shows a plain edit (not one that recomputes the chain: nothing
    // signed pins it).
    const std::string file = ids.begin()->first;
    int64_t x = 0;
    {
        Db db(store + "/" + file);
        const auto candidates = db.ids("SELECT id FROM events WHERE event_type NOT LIKE 'synthetic.%'");
        REQUIRE(!candidates.empty());
        x = candidates[rng() % candidates.size()];
        db.exec("UPDATE events SET sequence = sequence + 1000000 WHERE id = " + std::to_string(x));
    }
    const VerifyRun edited = verify(store, key);
    INFO(file << ": row " << x << " changed; " << edited);
    CHECK(edited.exit_code == 1);
    CHECK(edited.file(file).kind == "changed row");
    CHECK(edited.file(file).row == x);
}
