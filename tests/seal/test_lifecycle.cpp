// A sealed store through eventd's own life (issue 28): retention deleting from it while eventd
// runs, and sealing that begins at a reload — each then verified by the real `eventctl verify`.
#include <catch2/catch.hpp>

#include <csignal>

#include "eventd/pipeline.hpp"
#include "seal_fixture.hpp"
#include "support/eventually.hpp"

using namespace eventd::seal_it;

namespace {
using Status = FileVerdict::Status;

// Every active shard's first chained row (the one after metadata chain_origin): its id, and
// whether it is a checkpoint (retention's anchor). Rows before it are a cut retention has not
// finished (eventd stops between two of its batches); they are outside the chain.
std::map<std::string, std::pair<int64_t, bool>> first_chained_rows(const std::string& store) {
    std::map<std::string, std::pair<int64_t, bool>> out;
    for (const std::string& file : active_shards(store)) {
        Db db(store + "/" + file);
        const auto origin = eventd::store::parse_chain_point(db.metadata("chain_origin"));
        REQUIRE(origin);
        const auto rows = read_rows(db, "id = (SELECT min(id) FROM events WHERE id > " + std::to_string(origin->id) + ")");
        if (!rows.empty()) out[file] = {rows[0].id, rows[0].checkpoint()};
    }
    return out;
}
}  // namespace

TEST_CASE("lifecycle: retention's size limit on a running sealed store leaves a store that verifies", "[lifecycle]") {
    test_support::TempDir dir;
    const std::string store = dir.str() + "/events";
    const std::string key = setup_sealing(store);
    eventd::it::Pipeline p({.cpus = 2,
                            .generate = "rate=3000,payload=200",
                            .eventd = {{"CheckpointIntervalSeconds", 1}},
                            .store_dir = store});
    auto log = [&] { return p.eventd().log(); };
    p.start_eventd();
    wait_checkpoints(store, 2, 4, {}, log);
    p.stop_emission();
    // Everything emitted is sealed once two more checkpoints follow it.
    wait_checkpoints(store, 2, 2, last_ids(store), log);

    p.write_eventd_config({{"CheckpointIntervalSeconds", 1}, {"EventRetentionMaxBytes", 64 * 1024}});
    p.eventd().signal(SIGHUP);
    // Retention cuts whole sealed prefixes: each shard's chain then starts at a checkpoint past row 1.
    const bool cut = test_support::eventually(
        [&] {
            const auto first = first_chained_rows(store);
            if (first.size() != 2) return false;
            for (const auto& [file, row] : first)
                if (row.first <= 1 || !row.second) return false;
            return true;
        },
        std::chrono::seconds(30), std::chrono::milliseconds(100));
    {
        INFO("eventd log:\n" << log());
        REQUIRE(cut);
    }
    CHECK_THAT(p.stop_eventd(), Catch::Contains("retention deleted"));
    // Read after the stop: retention may have begun its next cut meanwhile.
    const auto first = first_chained_rows(store);
    REQUIRE(first.size() == 2);
    const VerifyRun v = verify(store, key);
    INFO(v);
    CHECK(v.exit_code == 0);
    CHECK_THAT(v.summary, Catch::StartsWith("verify: OK: "));
    for (const auto& [file, row] : first) {
        INFO(file << "'s chain starts at row " << row.first);
        CHECK(row.second);
        CHECK(v.file(file).status == Status::verified);
        // A prefix is gone: fewer rows than ids (rows of an unfinished cut are counted apart).
        CHECK(int64_t(v.file(file).rows) < last_ids(store).at(file));
    }
    // And a prefix deleted the other way — by timestamp, as retention without sealing would,
    // here the anchor itself — is reported where it begins.
    const std::string victim = first.begin()->first;
    {
        Db db(store + "/" + victim);
        db.exec("DELETE FROM events WHERE id <= " + std::to_string(first.at(victim).first));
    }
    const VerifyRun after = verify(store, key);
    INFO(after);
    CHECK(after.exit_code == 1);
    CHECK(after.file(victim).status == Status::broken);
    CHECK(after.file(victim).kind == "missing rows");
    CHECK(after.file(victim).row == first.at(victim).first);
}

TEST_CASE("lifecycle: a sealing key set up while eventd runs is taken at the next reload", "[lifecycle]") {
    test_support::TempDir dir;
    const std::string store = dir.str() + "/events";
    eventd::it::Pipeline p({.cpus = 2,
                            .generate = "rate=300,payload=64",
                            .eventd = {{"CheckpointIntervalSeconds", 1}},
                            .store_dir = store});
    p.start_eventd();
    REQUIRE(p.eventd().wait_log("is not sealed", std::chrono::seconds(10)));
    REQUIRE(test_support::eventually(
        [&] {
            const auto ids = last_ids(store);
            return ids.size() == 2 && ids.begin()->second > 10 && ids.rbegin()->second > 10;
        },
        std::chrono::seconds(30), std::chrono::milliseconds(50)));
    const auto before = last_ids(store);
    const std::string key = setup_sealing(store);
    p.eventd().signal(SIGHUP);
    REQUIRE(p.eventd().wait_log("sealing the store", std::chrono::seconds(10)));
    wait_checkpoints(store, 2, 2, {}, [&] { return p.eventd().log(); });
    p.stop_eventd();

    const VerifyRun v = verify(store, key);
    INFO(v);
    CHECK(v.exit_code == 0);
    for (const auto& [file, last] : before) {
        INFO(file);
        const FileVerdict f = v.file(file);
        CHECK(f.status == Status::verified);
        // The rows from before the key are reported as not protected, at least those seen before it.
        CHECK_THAT(f.line, Catch::Contains("from before the chain (not protected)"));
    }
}
