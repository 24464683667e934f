// Quarantined shard files and verification (issue 28; DESIGN.md §8). A file in a shard's place
// that is not a shard is renamed shard-NNNN.quarantined-<time>.db by eventd and a fresh shard
// takes its place. The fresh shards verify; the quarantined file cannot be read as a store file
// and is reported so ("unreadable", exit 1): the verifier cannot vouch for it, and the same
// picture is what an attacker leaves who overwrites a sealed shard — which must not pass as
// verified.
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>

#include <catch2/catch.hpp>

#include "eventd/pipeline.hpp"
#include "seal_fixture.hpp"
#include "support/store_reader.hpp"
#include "test_seed.hpp"

using namespace eventd::seal_it;
namespace fs = std::filesystem;

namespace {

void write_garbage(const std::string& path, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::string garbage(64 * 1024, '\0');
    for (char& c : garbage) c = static_cast<char>(rng());
    std::ofstream(path, std::ios::binary | std::ios::trunc) << garbage;
}

std::vector<std::string> quarantined_files(const std::string& store) {
    const std::regex name("shard-0001\\.quarantined-[0-9]+(-[0-9]+)?\\.db");
    std::vector<std::string> out;
    for (const std::string& f : eventd::it::shard_files(store))
        if (std::regex_match(f, name)) out.push_back(f);
    return out;
}

// The store holds shard-0000.db, shard-0001.db (both sealed and verified) and one quarantined
// file, reported unreadable.
void check_quarantine_reported(const std::string& store, const std::string& key) {
    const auto aside = quarantined_files(store);
    REQUIRE(aside.size() == 1);
    const VerifyRun v = verify(store, key);
    INFO(v);
    CHECK(v.exit_code == 1);
    CHECK(v.summary == "verify: FAILED: 1 of 3 files broken");
    CHECK(v.files.size() == 3);
    const FileVerdict q = v.file(aside[0]);
    CHECK(q.status == FileVerdict::Status::broken);
    CHECK(q.kind == "unreadable");
    CHECK(q.row == 0);
    CHECK(!q.what.empty());  // why it cannot be read
    for (const std::string file : {"shard-0000.db", "shard-0001.db"}) {
        INFO(file);
        CHECK(v.file(file).status == FileVerdict::Status::verified);
        CHECK(v.file(file).checkpoints >= 2);
    }
}

}  // namespace

TEST_CASE("quarantine: garbage in a shard's place before the first start is quarantined and reported unreadable; "
          "the fresh shards verify",
          "[quarantine]") {
    const uint64_t seed = test_seed("SEAL_QUARANTINE_SEED", "quarantine: the garbage bytes");
    test_support::TempDir dir;
    const std::string store = dir.str() + "/events";
    const std::string key = setup_sealing(store);
    write_garbage(store + "/shard-0001.db", seed);
    eventd::it::Pipeline p({.cpus = 2,
                            .generate = "rate=300,payload=64",
                            .eventd = {{"CheckpointIntervalSeconds", 1}, {"StorageShards", 2}},
                            .store_dir = store});
    p.start_eventd();
    wait_checkpoints(store, 2, 2, {}, [&] { return p.eventd().log(); });
    p.stop_eventd();
    check_quarantine_reported(store, key);
}

TEST_CASE("quarantine: a sealed shard overwritten with garbage while eventd is stopped is reported unreadable",
          "[quarantine]") {
    // The attacker destroys a sealed shard rather than editing it; eventd sets the file aside
    // and starts a fresh shard, which verifies — the destroyed one must not pass unnoticed.
    const uint64_t seed = test_seed("SEAL_QUARANTINE_SEED", "quarantine: the garbage bytes");
    test_support::TempDir dir;
    const std::string store = dir.str() + "/events";
    const std::string key = setup_sealing(store);
    eventd::it::Pipeline p({.cpus = 2,
                            .generate = "rate=300,payload=64",
                            .eventd = {{"CheckpointIntervalSeconds", 1}, {"StorageShards", 2}},
                            .store_dir = store});
    auto log = [&] { return p.eventd().log(); };
    p.start_eventd();
    wait_checkpoints(store, 2, 2, {}, log);
    p.stop_eventd();
    REQUIRE(!fs::exists(store + "/shard-0001.db-wal"));  // a clean stop leaves no WAL beside it
    const auto before = last_ids(store);
    write_garbage(store + "/shard-0001.db", seed);
    p.start_eventd();
    // The fresh shard-0001.db numbers its rows from 1 again.
    wait_checkpoints(store, 2, 2, {{"shard-0000.db", before.at("shard-0000.db")}}, log);
    p.stop_eventd();
    check_quarantine_reported(store, key);
}
