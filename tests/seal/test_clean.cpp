// An untouched sealed store verifies (issue 28): after a clean stop, after a restart on the same
// store, after eventd was SIGKILLed and started again; and while eventd runs, where the rows of
// the current interval are not sealed yet (exit 3) but nothing is ever reported broken.
#include <catch2/catch.hpp>

#include <fstream>

#include "eventd/pipeline.hpp"
#include "seal_fixture.hpp"

using namespace eventd::seal_it;

namespace {

using Status = FileVerdict::Status;

// Exit 0, "verify: OK", every active shard verified with checkpoints, and the row counts of
// `ids` (max id per shard: rows are contiguous from 1).
void check_all_sealed(const VerifyRun& v, const std::map<std::string, int64_t>& ids) {
    INFO(v);
    CHECK(v.exit_code == 0);
    CHECK_THAT(v.summary, Catch::StartsWith("verify: OK: "));
    CHECK_THAT(v.summary, Catch::EndsWith(", all sealed"));
    CHECK(v.files.size() == ids.size());
    for (const auto& [file, last] : ids) {
        const FileVerdict f = v.file(file);
        INFO(file);
        CHECK(f.status == Status::verified);
        CHECK(f.rows == uint64_t(last));
        CHECK(f.checkpoints >= 2);
    }
}

// A store that may have a tail after its last checkpoint: exit 0 or 3, nothing broken.
void check_intact(const VerifyRun& v) {
    INFO(v);
    CHECK((v.exit_code == 0 || v.exit_code == 3));
    CHECK((v.summary.rfind("verify: OK: ", 0) == 0 || v.summary.rfind("verify: intact, ", 0) == 0));
    CHECK(v.files.size() == 2);
    for (const auto& [file, f] : v.files) {
        INFO(file);
        CHECK((f.status == Status::verified || f.status == Status::unsealed));
        if (f.status == Status::unsealed) CHECK(f.sealed_through > 0);
    }
}

// The last row of every shard is a final checkpoint (eventd's shutdown).
void check_final_checkpoints(const std::string& store) {
    for (const std::string& file : active_shards(store)) {
        Db db(store + "/" + file);
        const auto cps = checkpoints(db);
        REQUIRE(!cps.empty());
        INFO(file);
        CHECK(cps.back().id == db.integer("SELECT max(id) FROM events"));
        CHECK(cps.back().c.final);
    }
}

}  // namespace

TEST_CASE("clean: an untouched store verifies after a stop, a restart, a SIGKILL and while eventd runs", "[clean]") {
    test_support::TempDir dir;
    const std::string store = dir.str() + "/events";
    std::string setup_output;
    const std::string key = setup_sealing(store, &setup_output);
    // --key takes the key or a file holding it (its last line): the operator's saved output.
    const std::string key_file = dir.str() + "/verification-key.txt";
    std::ofstream(key_file) << setup_output;

    eventd::it::Pipeline p({.cpus = 2,
                            .generate = "rate=300,payload=64",
                            .eventd = {{"CheckpointIntervalSeconds", 1}},
                            .store_dir = store});
    auto log = [&] { return p.eventd().log(); };

    p.start_eventd();
    wait_checkpoints(store, 2, 2, {}, log);
    // While eventd runs: the current interval's rows are unsealed, nothing is broken.
    for (int i = 0; i < 3; ++i) check_intact(verify(store, key));
    p.stop_eventd();
    check_final_checkpoints(store);
    check_all_sealed(verify(store, key), last_ids(store));
    check_all_sealed(verify(store, key_file), last_ids(store));

    // A second eventd on the same store goes on with the chains and their checkpoints.
    auto before = last_ids(store);
    p.start_eventd();
    wait_checkpoints(store, 2, 2, before, log);
    p.stop_eventd();
    check_final_checkpoints(store);
    check_all_sealed(verify(store, key), last_ids(store));

    // SIGKILL mid-run: no final checkpoint; what was committed after the last checkpoint is an
    // unsealed tail, never a break. The next start seals it with its first commit.
    before = last_ids(store);
    p.start_eventd();
    wait_checkpoints(store, 2, 2, before, log);
    p.kill_eventd();
    check_intact(verify(store, key));
    before = last_ids(store);
    p.start_eventd();
    wait_checkpoints(store, 2, 1, before, log);
    p.stop_eventd();
    check_final_checkpoints(store);
    check_all_sealed(verify(store, key), last_ids(store));
}
