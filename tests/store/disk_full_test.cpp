// Disk full (PSD-008 §11.1): a commit on a full filesystem fails with ENOSPC and "event store
// is full", nothing of the batch remains, and the next commit after space returns succeeds.
// Needs root to mount a small tmpfs; otherwise the test is skipped (exit 77, the reason shown).
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "skip_test.hpp"
#include "store_test_util.hpp"
#include "support/temp_dir.hpp"

using namespace store_test;
using test_support::event_row;
using test_support::guid;
using test_support::TempDir;

namespace {

class SmallTmpfs {
public:
    explicit SmallTmpfs(const fs::path& dir) : dir_(dir) {
        fs::create_directory(dir_);
        mounted_ = geteuid() == 0 && ::mount("tmpfs", dir_.c_str(), "tmpfs", 0, "size=1m") == 0;
        if (!mounted_) reason_ = geteuid() != 0 ? "not root" : std::strerror(errno);
    }
    ~SmallTmpfs() {
        if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
    }
    bool mounted() const { return mounted_; }
    const std::string& reason() const { return reason_; }

private:
    fs::path dir_;
    bool mounted_ = false;
    std::string reason_;
};

// Fill the filesystem with one file until writes fail.
void fill(const fs::path& file) {
    FILE* f = std::fopen(file.c_str(), "wb");
    REQUIRE(f != nullptr);
    std::vector<char> chunk(4096, 'x');
    while (std::fwrite(chunk.data(), 1, chunk.size(), f) == chunk.size() && std::fflush(f) == 0) {}
    std::fclose(f);
}

}  // namespace

TEST_CASE("an insert that spills onto a full disk fails with ENOSPC and the store recovers", "[diskfull]") {
    // 60 rows of 64 KiB exceed SQLite's 2 MiB page cache: pages spill to the WAL during the
    // inserts, so the failure comes from insert() and the caller rolls back.
    TempDir dir;
    const fs::path store = dir / "events";
    SmallTmpfs tmpfs(store);
    if (!tmpfs.mounted()) {
        fs::remove_all(dir.path());
        skip_test("the disk-full tests need a 1 MiB tmpfs and cannot mount one (" + tmpfs.reason() + ")");
    }
    const Guid boot = guid(0xb0);
    {
        auto db = open_shard(store);
        commit_range(*db, boot, 0, 1, 10);
        fill(store / "filler");

        REQUIRE(db->begin().ok());
        eventd::store::Status status;
        uint64_t inserted = 0;
        for (uint64_t s = 11; s <= 70 && status.ok(); ++s) {
            auto row = event_row({.boot = boot, .timestamp = s, .cpu = 0, .sequence = s});
            row.payload = std::vector<uint8_t>(64 * 1024, 0xab);
            status = db->insert(row);
            if (status.ok()) ++inserted;
        }
        REQUIRE_FALSE(status.ok());
        CHECK(inserted < 60);
        CHECK(status.error().code == base::ErrorCode::no_space);
        CHECK_THAT(status.error().message, Catch::Contains("event store is full") && Catch::Contains("shard-0000.db"));
        db->rollback();
        CHECK_FALSE(db->in_transaction());
        CHECK(db->sequence_state().at({boot, 0}).ranges() == std::map<uint64_t, uint64_t>{{1, 10}});

        fs::remove(store / "filler");
        commit_range(*db, boot, 0, 71, 80);
        CHECK(db->sequence_state().at({boot, 0}).ranges() == std::map<uint64_t, uint64_t>{{1, 10}, {71, 80}});
    }
    RawDb raw(store / "shard-0000.db");
    CHECK(raw.count("SELECT count(*) FROM events") == 20);
    CHECK(raw.count("SELECT count(*) FROM events WHERE sequence BETWEEN 11 AND 70") == 0);
    CHECK(raw.count("SELECT count(*) FROM sequence_state") == 2);
}

TEST_CASE("a commit that fails on a full disk during COMMIT itself reports ENOSPC", "[diskfull]") {
    // Small rows stay in the page cache until COMMIT writes the WAL: the failure comes from
    // COMMIT, and commit() must roll back on its own.
    TempDir dir;
    const fs::path store = dir / "events";
    SmallTmpfs tmpfs(store);
    if (!tmpfs.mounted()) {
        fs::remove_all(dir.path());
        skip_test("the disk-full tests need a 1 MiB tmpfs and cannot mount one (" + tmpfs.reason() + ")");
    }
    const Guid boot = guid(0xb0);
    auto db = open_shard(store);
    commit_range(*db, boot, 0, 1, 1);
    fill(store / "filler");

    REQUIRE(db->begin().ok());
    for (uint64_t s = 2; s <= 400; ++s)
        REQUIRE(db->insert(event_row({.boot = boot, .timestamp = s, .cpu = 0, .sequence = s})).ok());
    REQUIRE(db->account(boot, 0, 2, 400).ok());
    auto status = db->commit();
    REQUIRE_FALSE(status.ok());
    CHECK(status.error().code == base::ErrorCode::no_space);
    CHECK_THAT(status.error().message, Catch::Contains("event store is full"));
    CHECK_FALSE(db->in_transaction());
    CHECK(db->sequence_state().at({boot, 0}).ranges() == std::map<uint64_t, uint64_t>{{1, 1}});

    fs::remove(store / "filler");
    commit_range(*db, boot, 0, 401, 401);
    RawDb raw(store / "shard-0000.db");
    CHECK(raw.count("SELECT count(*) FROM events") == 2);
    CHECK(raw.rows("SELECT first_sequence, last_sequence FROM sequence_state ORDER BY first_sequence") ==
          std::vector<std::vector<std::string>>{{"1", "1"}, {"401", "401"}});
}
