// load_sequence_state: the union of every shard's accounted ranges, read at startup without
// scanning events (DESIGN.md §4.3, §8).
#include "store_test_util.hpp"
#include "support/temp_dir.hpp"

using namespace store_test;
using eventd::store::load_sequence_state;
using eventd::store::quarantine_shard;
using eventd::store::ShardDb;
using test_support::event_row;
using test_support::guid;
using test_support::TempDir;

namespace {
using Ranges = std::map<uint64_t, uint64_t>;
}

TEST_CASE("the state of two shards fed by one CPU is the union of their interleaved ranges", "[load]") {
    TempDir dir;
    const Guid boot = guid(0xb0);
    {
        auto even = open_shard(dir.path(), 0);
        auto odd = open_shard(dir.path(), 1);
        commit_range(*even, boot, 0, 1, 100);
        commit_range(*odd, boot, 0, 101, 200);
        commit_range(*even, boot, 0, 201, 300);
        commit_range(*odd, boot, 0, 401, 500);  // 301..400 never committed
        commit_range(*odd, boot, 1, 1, 5);
        commit_range(*even, guid(0xb1), 0, 1, 7);
    }
    std::vector<std::string> unreadable;
    auto state = load_sequence_state(dir.path(), &unreadable);
    CHECK(unreadable.empty());
    REQUIRE(state.size() == 3);
    CHECK(state.at({boot, 0}).ranges() == Ranges{{1, 300}, {401, 500}});
    CHECK(state.at({boot, 1}).ranges() == Ranges{{1, 5}});
    CHECK(state.at({guid(0xb1), 0}).ranges() == Ranges{{1, 7}});
}

TEST_CASE("ranges committed by a writer that crashed are read from its WAL", "[load]") {
    TempDir dir;
    const Guid boot = guid(0xb0);
    in_crashing_child([&] {
        auto db = ShardDb::open(dir.path(), 0);
        if (!db) return false;
        auto& shard = *std::move(db).value().release();  // never closed: the child dies like a killed writer
        return shard.begin().ok() &&
               shard.insert(event_row({.boot = boot, .timestamp = 9, .cpu = 2, .sequence = 9})).ok() &&
               shard.account(boot, 2, 1, 9).ok() && shard.commit().ok();
    });
    REQUIRE(fs::exists(dir / "shard-0000.db-wal"));
    auto state = load_sequence_state(dir.path());
    CHECK(state.at({boot, 2}).ranges() == Ranges{{1, 9}});
}

TEST_CASE("quarantined shards still contribute their ranges", "[load]") {
    TempDir dir;
    const Guid boot = guid(0xb0);
    {
        auto db = open_shard(dir.path(), 0);
        commit_range(*db, boot, 0, 1, 10);
    }
    REQUIRE(quarantine_shard(dir.path(), 0).ok());
    {
        auto db = open_shard(dir.path(), 0);
        commit_range(*db, boot, 0, 11, 20);
    }
    auto state = load_sequence_state(dir.path());
    CHECK(state.at({boot, 0}).ranges() == Ranges{{1, 20}});
}

TEST_CASE("foreign databases are skipped silently, unreadable files are listed", "[load]") {
    TempDir dir;
    const Guid boot = guid(0xb0);
    {
        auto db = open_shard(dir.path(), 0);
        commit_range(*db, boot, 0, 1, 3);
    }
    {
        RawDb foreign(dir / "other.db", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
        foreign.exec("CREATE TABLE t (x)");
    }
    {
        // eventd-meta.db is never read, even if it had a table of that name.
        RawDb meta(dir / "eventd-meta.db", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
        meta.exec(
            "CREATE TABLE sequence_state (boot_id BLOB, cpu_id INTEGER, first_sequence INTEGER, "
            "last_sequence INTEGER)");
        meta.exec("INSERT INTO sequence_state VALUES (zeroblob(16), 0, 1, 1000)");
    }
    write_file(dir / "shard-0001.db", std::string(4096, '\x33'));
    write_file(dir / "notes.txt", "not a database");

    std::vector<std::string> unreadable;
    auto state = load_sequence_state(dir.path(), &unreadable);
    CHECK(unreadable == std::vector<std::string>{"shard-0001.db"});
    REQUIRE(state.size() == 1);
    CHECK(state.at({boot, 0}).ranges() == Ranges{{1, 3}});
}

TEST_CASE("a missing directory yields an empty state", "[load]") {
    TempDir dir;
    std::vector<std::string> unreadable;
    auto state = load_sequence_state(dir / "absent", &unreadable);
    CHECK(state.empty());
}
