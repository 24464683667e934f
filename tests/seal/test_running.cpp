// A running sealed store (issue 28): an old row changed with sqlite3 while eventd writes beside
// it is reported at once and stays reported after eventd seals more and stops (checkpoints
// never "heal" an earlier change); and verifying a busy store while eventd commits hundreds of
// times a second never reports a break that is not there.
#include <chrono>
#include <random>

#include <catch2/catch.hpp>

#include "eventd/pipeline.hpp"
#include "seal_fixture.hpp"
#include "test_seed.hpp"

using namespace eventd::seal_it;

TEST_CASE("running: an old row changed while eventd runs is a changed row at its id, before and after the stop",
          "[running]") {
    std::mt19937_64 rng(test_seed("SEAL_RUNNING_SEED", "running: the row changed"));
    test_support::TempDir dir;
    const std::string store = dir.str() + "/events";
    const std::string key = setup_sealing(store);
    eventd::it::Pipeline p({.cpus = 2,
                            .generate = "rate=500,payload=64",
                            .eventd = {{"CheckpointIntervalSeconds", 1}},
                            .store_dir = store});
    auto log = [&] { return p.eventd().log(); };
    p.start_eventd();
    wait_checkpoints(store, 2, 3, {}, log);

    const auto shards = active_shards(store);
    REQUIRE(shards.size() == 2);
    const size_t i = rng() % 2;
    const std::string file = shards[i], other = shards[1 - i];
    int64_t x = 0;
    {
        // A KMES row before the shard's second checkpoint: sealed for a while already.
        Db db(store + "/" + file);
        const auto cps = checkpoints(db);
        REQUIRE(cps.size() >= 2);
        const auto ids = db.ids("SELECT id FROM events WHERE event_type NOT LIKE 'synthetic.%' AND id < " +
                                std::to_string(cps[1].id));
        REQUIRE(!ids.empty());
        x = ids[rng() % ids.size()];
        Row r = read_rows(db, "id = " + std::to_string(x)).at(0);
        REQUIRE(r.payload);
        REQUIRE(!r.payload->empty());
        (*r.payload)[rng() % r.payload->size()] ^= uint8_t(1 + rng() % 255);
        write_row(db, r);  // beside eventd's own commits (SQLite's locking serialises them)
    }
    INFO(file << ": row " << x << " changed while eventd runs");
    auto check = [&](const VerifyRun& v) {
        INFO(v);
        CHECK(v.exit_code == 1);
        CHECK(v.summary == "verify: FAILED: 1 of 2 files broken");
        const FileVerdict f = v.file(file);
        CHECK(f.status == FileVerdict::Status::broken);
        CHECK(f.kind == "changed row");
        CHECK(f.row == x);
        const FileVerdict o = v.file(other);
        CHECK((o.status == FileVerdict::Status::verified || o.status == FileVerdict::Status::unsealed));
    };
    check(verify(store, key));

    // eventd goes on sealing (it never reads the row back), and stops cleanly.
    wait_checkpoints(store, 2, 2, last_ids(store), log);
    CHECK(p.eventd().running());
    p.stop_eventd();
    check(verify(store, key));
}

TEST_CASE("running: verifying a busy store while eventd commits never reports a break", "[running]") {
    // Thousands of events a second on each ring: eventd commits hundreds of times a second in
    // each shard. Every verification of that moving store sees an intact store (exit 0, or 3
    // for the current interval's unsealed rows). Repeated for a few seconds: a verifier that
    // reads the store in more than one snapshot (its metadata in one, its rows in a later one)
    // takes the rows committed between for rows eventd never issued.
    test_support::TempDir dir;
    const std::string store = dir.str() + "/events";
    const std::string key = setup_sealing(store);
    eventd::it::Pipeline p({.cpus = 2,
                            .generate = "rate=5000,payload=64",
                            .eventd = {{"CheckpointIntervalSeconds", 1}},
                            .store_dir = store});
    p.start_eventd();
    wait_checkpoints(store, 2, 1, {}, [&] { return p.eventd().log(); });
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    int runs = 0;
    while (std::chrono::steady_clock::now() < until) {
        const VerifyRun v = verify(store, key);
        ++runs;
        INFO("verification " << runs << ": " << v);
        REQUIRE((v.exit_code == 0 || v.exit_code == 3));
        for (const auto& [file, f] : v.files) {
            INFO(file);
            REQUIRE((f.status == FileVerdict::Status::verified || f.status == FileVerdict::Status::unsealed));
        }
    }
    CHECK(runs >= 10);
    p.stop_eventd();
}
