// A sealed store through eventd's own life (issue 28): retention deleting from it while eventd
// runs, and sealing that begins at a reload — each then verified by the real `eventctl verify`.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <iterator>

#include "eventd/pipeline.hpp"
#include "seal_fixture.hpp"
#include "support/eventctl_runner.hpp"
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

namespace {

// The store directory of a store that belongs to eventd's user (here the real user nobody, who
// plants links in it), and a file of root's outside it that a followed link would change.
struct StoreOfAnotherUser {
    test_support::TempDir dir;
    const std::string store = dir.str() + "/events";
    const std::string victim = dir.str() + "/passwd";
    const eventd::query_it::RunAs owner = *eventd::query_it::lookup_user("nobody");

    explicit StoreOfAnotherUser(mode_t mode) {
        REQUIRE(::mkdir(store.c_str(), 0700) == 0);
        REQUIRE(::chmod(store.c_str(), mode) == 0);
        REQUIRE(::chown(store.c_str(), owner.uid, owner.gid) == 0);
        std::ofstream(victim) << "root:x:0:0:root:/root:/bin/bash\n";
        REQUIRE(::chmod(victim.c_str(), 0644) == 0);
    }
    void plant_link(const std::string& name) const {
        const auto r = eventd::query_it::run_command(
            eventd::query_it::command_as(owner, {"/bin/ln", "-s", victim, store + "/" + name}),
            std::chrono::seconds(10));
        INFO(r.err);
        REQUIRE(r.exit_code == 0);
    }
    void check_victim_untouched() const {
        std::ifstream in(victim);
        std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        CHECK(text == "root:x:0:0:root:/root:/bin/bash\n");
        struct stat st {};
        REQUIRE(::stat(victim.c_str(), &st) == 0);
        CHECK(st.st_uid == 0);
        CHECK(st.st_gid == 0);
        CHECK((st.st_mode & 07777) == 0644);
    }
};

}  // namespace

// Issue 39 part 1, the security review's reproduction: the store's owner plants
// sealing.certs.tmp -> a root file; root runs `eventctl seal --setup`, as eventd's warning says.
TEST_CASE("lifecycle: seal --setup as root follows no link the store's owner planted, and gives it the keys",
          "[lifecycle]") {
    StoreOfAnotherUser s(0750);
    s.plant_link("sealing.certs.tmp");
    s.plant_link("sealing.key.tmp");
    const auto setup = eventd::query_it::setup_sealing_keys(s.store);
    INFO(setup.error);
    REQUIRE(setup.error.empty());
    s.check_victim_untouched();
    for (const char* name : {"sealing.key", "sealing.certs"}) {
        INFO(name);
        struct stat st {};
        REQUIRE(::lstat((s.store + "/" + name).c_str(), &st) == 0);
        CHECK(S_ISREG(st.st_mode));
        CHECK(st.st_uid == s.owner.uid);
        CHECK(st.st_gid == s.owner.gid);
        CHECK((st.st_mode & 07777) == 0600);
        struct stat tmp {};
        CHECK(::lstat((s.store + "/" + name + ".tmp").c_str(), &tmp) != 0);
    }
}

TEST_CASE("lifecycle: seal --setup as root refuses a store directory others can write", "[lifecycle]") {
    StoreOfAnotherUser s(0777);
    s.plant_link("sealing.certs.tmp");
    const auto run = eventd::query_it::run_command({eventd::query_it::eventctl_path(), "seal", "--setup", "--store",
                                                    s.store, "--epoch-seconds", "2", "--years", "0.001"},
                                                   std::chrono::seconds(60));
    INFO(run.err);
    CHECK(run.exit_code != 0);
    CHECK_THAT(run.err, Catch::Contains(s.store + " can be written by others than its owner (mode 0777"));
    CHECK_THAT(run.err, Catch::Contains("chmod go-w " + s.store));
    s.check_victim_untouched();
    struct stat st {};
    CHECK(::lstat((s.store + "/sealing.key").c_str(), &st) != 0);
}
