// Creating, opening, verifying and quarantining shard files (PSD-008 §3.1–§3.2, DESIGN.md §8).
#include <cerrno>
#include <filesystem>
#include <regex>

#include "store/shard_snapshot.hpp"
#include "store_test_util.hpp"
#include "support/descriptors_exhausted.hpp"
#include "support/temp_dir.hpp"

using namespace store_test;
using eventd::store::quarantine_shard;
using eventd::store::shard_file_name;
using eventd::store::ShardDb;
using test_support::event_row;
using test_support::guid;
using test_support::TempDir;

namespace {
using Rows = std::vector<std::vector<std::string>>;

// A shard's file_id as stored: the metadata text, read straight from the file.
std::string stored_file_id(const TempDir& dir, const std::string& name = "shard-0000.db") {
    return RawDb(dir / name).value("SELECT value FROM metadata WHERE key = 'file_id'");
}

std::string hex_of(const eventd::store::FileId& id) {
    std::string hex;
    for (const uint8_t b : id) hex += "0123456789abcdef"[b >> 4], hex += "0123456789abcdef"[b & 15];
    return hex;
}

// shard-0000.db's file_id as a reader sees it (ShardSnapshot::file_id).
base::Result<eventd::store::FileId> snapshot_file_id(const TempDir& dir) {
    auto snapshot = eventd::store::ShardSnapshot::open({dir / "shard-0000.db", "shard-0000.db", 0}, {});
    REQUIRE(snapshot);
    return snapshot->file_id();
}
}  // namespace

TEST_CASE("shard files are named shard-NNNN.db", "[open]") {
    CHECK(shard_file_name(0) == "shard-0000.db");
    CHECK(shard_file_name(3) == "shard-0003.db");
    CHECK(shard_file_name(255) == "shard-0255.db");
}

TEST_CASE("creating a shard produces exactly the 3.1 schema", "[open]") {
    TempDir dir;
    open_shard(dir.path(), 3);
    RawDb raw(dir / "shard-0003.db");

    CHECK(raw.rows("SELECT type, name, tbl_name FROM sqlite_master ORDER BY type, name") ==
          Rows{{"index", "idx_events_timestamp", "events"},
               {"index", "sqlite_autoindex_metadata_1", "metadata"},
               {"table", "chain_segments", "chain_segments"},
               {"table", "events", "events"},
               {"table", "metadata", "metadata"},
               {"table", "sequence_state", "sequence_state"}});
    CHECK(raw.rows("SELECT name FROM pragma_index_list('events')") == Rows{{"idx_events_timestamp"}});
    CHECK(raw.rows("SELECT name FROM pragma_index_info('idx_events_timestamp')") == Rows{{"timestamp"}});
    CHECK(raw.rows("SELECT name, type, \"notnull\", pk FROM pragma_table_info('events')") ==
          Rows{{"id", "INTEGER", "0", "1"},
               {"boot_id", "BLOB", "1", "0"},
               {"timestamp", "INTEGER", "1", "0"},
               {"cpu_id", "INTEGER", "0", "0"},
               {"sequence", "INTEGER", "0", "0"},
               {"origin_class", "INTEGER", "0", "0"},
               {"event_type", "TEXT", "1", "0"},
               {"effective_token_guid", "BLOB", "0", "0"},
               {"true_token_guid", "BLOB", "0", "0"},
               {"process_guid", "BLOB", "0", "0"},
               {"payload", "BLOB", "0", "0"}});
    CHECK(raw.rows("SELECT name, type, \"notnull\", pk FROM pragma_table_info('metadata')") ==
          Rows{{"key", "TEXT", "0", "1"}, {"value", "TEXT", "1", "0"}});
    CHECK(raw.rows("SELECT name, type, \"notnull\", pk FROM pragma_table_info('sequence_state')") ==
          Rows{{"boot_id", "BLOB", "1", "1"},
               {"cpu_id", "INTEGER", "1", "2"},
               {"first_sequence", "INTEGER", "1", "3"},
               {"last_sequence", "INTEGER", "1", "0"}});
}

TEST_CASE("a new shard's metadata holds schema_version 1, an ISO 8601 UTC created_at, a file_id and the chain's start",
          "[open]") {
    TempDir dir;
    open_shard(dir.path());
    RawDb raw(dir / "shard-0000.db");
    CHECK(raw.value("SELECT count(*) FROM metadata") == "5");
    // Issue 28: an empty shard's chain starts before row 1, at the origin its file id names.
    CHECK(std::regex_match(raw.value("SELECT value FROM metadata WHERE key = 'chain_origin'"),
                           std::regex("0:[0-9a-f]{64}")));
    CHECK(raw.value("SELECT value FROM metadata WHERE key = 'chain_head'") ==
          raw.value("SELECT value FROM metadata WHERE key = 'chain_origin'"));
    CHECK(std::regex_match(stored_file_id(dir), std::regex("[0-9a-f]{32}")));
    CHECK(raw.value("SELECT value FROM metadata WHERE key = 'schema_version'") == "1");
    const std::string created = raw.value("SELECT value FROM metadata WHERE key = 'created_at'");
    CHECK(std::regex_match(created, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z)")));
}

TEST_CASE("a shard's file_id is its own, kept across reopening and read by a snapshot", "[open]") {
    TempDir dir;
    open_shard(dir.path(), 0);
    open_shard(dir.path(), 1);
    const std::string id0 = stored_file_id(dir);
    CHECK(id0 != stored_file_id(dir, "shard-0001.db"));
    open_shard(dir.path(), 0);
    CHECK(stored_file_id(dir) == id0);

    auto read = snapshot_file_id(dir);
    REQUIRE(read);
    CHECK(hex_of(*read) == id0);
}

TEST_CASE("a shard from before file ids: readers derive its id from its name, and the writer stores that id",
          "[open]") {
    TempDir dir;
    open_shard(dir.path());
    RawDb(dir / "shard-0000.db").exec("DELETE FROM metadata WHERE key = 'file_id'");
    const eventd::store::FileId derived = eventd::store::legacy_file_id("shard-0000.db");
    CHECK(derived != eventd::store::legacy_file_id("shard-0001.db"));
    auto read = snapshot_file_id(dir);
    REQUIRE(read);
    CHECK(*read == derived);
    open_shard(dir.path());
    CHECK(stored_file_id(dir) == hex_of(derived));
    // A file created afresh under the same name (after a quarantine) gets a random one.
    fs::remove(dir / "shard-0000.db");
    fs::remove(dir / "shard-0000.db-wal");
    fs::remove(dir / "shard-0000.db-shm");
    open_shard(dir.path());
    CHECK(stored_file_id(dir) != hex_of(derived));
}

TEST_CASE("row ids are never reused: not after retention deleted the largest, not after it emptied the file",
          "[open]") {
    TempDir dir;
    const Guid boot = guid(0xb0);
    auto max_id = [&] { return RawDb(dir / "shard-0000.db").count("SELECT max(id) FROM events"); };
    {
        auto db = open_shard(dir.path());
        commit_range(*db, boot, 0, 1, 3);  // ids 1..3, timestamps 1001..1003
        // Id 4 holds the oldest timestamp (committed late): retention deletes it first.
        REQUIRE(db->begin().ok());
        REQUIRE(db->insert(event_row({.boot = boot, .timestamp = 5, .cpu = 1, .sequence = 1})).ok());
        REQUIRE(db->commit().ok());
        CHECK(max_id() == 4);
        CHECK(db->delete_oldest(0, 1).value() == 1);
        CHECK(max_id() == 3);
        commit_range(*db, boot, 0, 4, 4);
        CHECK(max_id() == 5);  // SQLite alone would have numbered it 4 again

        // A rolled-back transaction's ids are issued again: they were never committed.
        REQUIRE(db->begin().ok());
        REQUIRE(db->insert(event_row({.boot = boot, .timestamp = 1005, .cpu = 0, .sequence = 5})).ok());
        db->rollback();
        commit_range(*db, boot, 0, 5, 5);
        CHECK(max_id() == 6);

        CHECK(db->delete_oldest(0, 100).value() == 5);  // empty
    }
    auto db = open_shard(dir.path());  // the largest id survives the reopening of an empty file
    commit_range(*db, boot, 0, 6, 6);
    CHECK(max_id() == 7);
}

TEST_CASE("a malformed file_id is reported, naming the file", "[open]") {
    TempDir dir;
    open_shard(dir.path());
    RawDb(dir / "shard-0000.db").exec("UPDATE metadata SET value = 'XYZ' WHERE key = 'file_id'");
    auto read = snapshot_file_id(dir);
    REQUIRE_FALSE(read);
    CHECK_THAT(read.error().message, Catch::Contains("shard-0000.db") && Catch::Contains("file_id"));
}

TEST_CASE("a new shard is in WAL mode", "[open]") {
    TempDir dir;
    auto db = open_shard(dir.path());
    RawDb raw(dir / "shard-0000.db");
    CHECK(raw.value("PRAGMA journal_mode") == "wal");
    CHECK(fs::exists(dir / "shard-0000.db-wal"));
}

TEST_CASE("reopening a shard keeps its rows and sequence state", "[open]") {
    TempDir dir;
    const Guid boot = guid(0xb0);
    eventd::store::SequenceState before;
    {
        auto db = open_shard(dir.path());
        commit_range(*db, boot, 1, 1, 10);
        commit_range(*db, boot, 2, 5, 7);
        before = db->sequence_state();
    }
    auto db = open_shard(dir.path());
    CHECK(db->sequence_state() == before);
    CHECK(db->sequence_state().at({boot, 1}).ranges() == std::map<uint64_t, uint64_t>{{1, 10}});
    RawDb raw(dir / "shard-0000.db");
    CHECK(raw.count("SELECT count(*) FROM events") == 13);
}

TEST_CASE("an unknown schema_version is refused and the file left untouched", "[open]") {
    TempDir dir;
    open_shard(dir.path());
    {
        RawDb raw(dir / "shard-0000.db");
        raw.exec("UPDATE metadata SET value = '2' WHERE key = 'schema_version'");
    }
    const std::string bytes = read_file(dir / "shard-0000.db");

    auto db = ShardDb::open(dir.path(), 0);
    REQUIRE_FALSE(db.ok());
    CHECK(db.error().code == base::ErrorCode::protocol);
    CHECK_THAT(db.error().message, Catch::Contains("'2'") && Catch::Contains("shard-0000.db"));
    CHECK(read_file(dir / "shard-0000.db") == bytes);
}

TEST_CASE("a shard that cannot be opened for a reason outside the file is not called broken", "[open]") {
    // Only ErrorCode::protocol quarantines a shard (DESIGN.md §8); a full disk or an I/O error
    // must not. Here SQLite cannot open the path at all (a directory): SQLITE_CANTOPEN.
    TempDir dir;
    std::filesystem::create_directories(dir / "shard-0000.db");
    auto db = ShardDb::open(dir.path(), 0);
    REQUIRE_FALSE(db.ok());
    CHECK(db.error().code != base::ErrorCode::protocol);
}

TEST_CASE("a garbage file is refused as not a database", "[open]") {
    TempDir dir;
    write_file(dir / "shard-0000.db", std::string(8192, '\x5a'));
    auto db = ShardDb::open(dir.path(), 0);
    REQUIRE_FALSE(db.ok());
    CHECK(db.error().code == base::ErrorCode::protocol);
    CHECK_THAT(db.error().message, Catch::Contains("file is not a database") && Catch::Contains("shard-0000.db"));
    CHECK(read_file(dir / "shard-0000.db") == std::string(8192, '\x5a'));
}

TEST_CASE("a shard without idx_events_timestamp is refused as broken", "[open]") {
    TempDir dir;
    open_shard(dir.path());
    {
        RawDb raw(dir / "shard-0000.db");
        raw.exec("DROP INDEX idx_events_timestamp");
    }
    auto db = ShardDb::open(dir.path(), 0);
    REQUIRE_FALSE(db.ok());
    CHECK(db.error().code == base::ErrorCode::protocol);
    CHECK_THAT(db.error().message, Catch::Contains("idx_events_timestamp"));
}

TEST_CASE("a shard without sequence_state is refused as broken", "[open]") {
    TempDir dir;
    open_shard(dir.path());
    {
        RawDb raw(dir / "shard-0000.db");
        raw.exec("DROP TABLE sequence_state");
    }
    auto db = ShardDb::open(dir.path(), 0);
    REQUIRE_FALSE(db.ok());
    CHECK_THAT(db.error().message, Catch::Contains("sequence_state is missing"));
}

TEST_CASE("a shard whose events table has other columns is refused as broken", "[open]") {
    TempDir dir;
    {
        RawDb raw(dir / "shard-0000.db", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
        raw.exec("CREATE TABLE events (id INTEGER PRIMARY KEY, boot_id BLOB NOT NULL, timestamp TEXT)");
        raw.exec("CREATE TABLE metadata (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
        raw.exec("INSERT INTO metadata VALUES ('schema_version', '1')");
    }
    auto db = ShardDb::open(dir.path(), 0);
    REQUIRE_FALSE(db.ok());
    CHECK(db.error().code == base::ErrorCode::protocol);
    CHECK_THAT(db.error().message, Catch::Contains("events column 2"));
}

TEST_CASE("an existing file without any table is created in place", "[open]") {
    TempDir dir;
    SECTION("empty file") { write_file(dir / "shard-0000.db", ""); }
    SECTION("creation interrupted after journal_mode=WAL") {
        RawDb raw(dir / "shard-0000.db", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
        raw.exec("PRAGMA journal_mode=WAL");
    }
    open_shard(dir.path());
    RawDb raw(dir / "shard-0000.db");
    CHECK(raw.value("SELECT value FROM metadata WHERE key = 'schema_version'") == "1");
}

TEST_CASE("quarantine renames the shard with its WAL and it stays readable", "[open][quarantine]") {
    TempDir dir;
    const Guid boot = guid(0xb1);
    // Leave committed rows only in the -wal, as a crashed writer would.
    in_crashing_child([&] {
        auto db = ShardDb::open(dir.path(), 2);
        if (!db) return false;
        auto& shard = *std::move(db).value().release();  // never closed: the child dies like a killed writer
        if (!shard.begin()) return false;
        for (uint64_t s = 1; s <= 5; ++s) {
            if (!shard.insert(event_row({.boot = boot, .timestamp = s, .cpu = 0, .sequence = s}))) return false;
        }
        return shard.account(boot, 0, 1, 5).ok() && shard.commit().ok();
    });
    REQUIRE(fs::exists(dir / "shard-0002.db-wal"));

    auto moved = quarantine_shard(dir.path(), 2);
    REQUIRE(moved.ok());
    CHECK(std::regex_match(*moved, std::regex(R"(shard-0002\.quarantined-\d+\.db)")));
    CHECK_FALSE(fs::exists(dir / "shard-0002.db"));
    CHECK_FALSE(fs::exists(dir / "shard-0002.db-wal"));
    CHECK(fs::exists(dir / (*moved + "-wal")));

    RawDb raw(dir / *moved, SQLITE_OPEN_READONLY);
    CHECK(raw.count("SELECT count(*) FROM events") == 5);

    auto fresh = open_shard(dir.path(), 2);  // a new shard takes its place
    CHECK(fresh->sequence_state().empty());
}

TEST_CASE("quarantining twice in one second keeps both files", "[open][quarantine]") {
    TempDir dir;
    open_shard(dir.path(), 1);
    auto first = quarantine_shard(dir.path(), 1);
    REQUIRE(first.ok());
    open_shard(dir.path(), 1);
    auto second = quarantine_shard(dir.path(), 1);
    REQUIRE(second.ok());
    CHECK(*first != *second);
    CHECK(fs::exists(dir / *first));
    CHECK(fs::exists(dir / *second));
}

TEST_CASE("a -wal left without its database is set aside before a new shard is created", "[open]") {
    TempDir dir;
    const Guid boot = guid(0xb2);
    in_crashing_child([&] {
        auto db = ShardDb::open(dir.path(), 0);
        if (!db) return false;
        auto& shard = *std::move(db).value().release();  // never closed: the child dies like a killed writer
        return shard.begin().ok() &&
               shard.insert(event_row({.boot = boot, .timestamp = 1, .cpu = 0, .sequence = 1})).ok() &&
               shard.commit().ok();
    });
    fs::remove(dir / "shard-0000.db");
    REQUIRE(fs::exists(dir / "shard-0000.db-wal"));
    const std::string wal = read_file(dir / "shard-0000.db-wal");

    open_shard(dir.path());
    RawDb raw(dir / "shard-0000.db");
    CHECK(raw.count("SELECT count(*) FROM events") == 0);
    bool set_aside = false;  // SQLite alone would delete it
    for (const auto& entry : fs::directory_iterator(dir.path())) {
        if (entry.path().filename().string().starts_with("shard-0000.db.orphaned-")) {
            set_aside = read_file(entry.path()) == wal;
        }
    }
    CHECK(set_aside);
}

// eventd at its RLIMIT_NOFILE cannot open a shard: that is the process's state, not the file's.
// The code says so (EMFILE), so that startup stops instead of quarantining a good shard.
TEST_CASE("a shard that cannot be opened for lack of descriptors is reported as such, not as broken", "[open]") {
    TempDir dir;
    open_shard(dir.path(), 0);  // exists, closed
    eventd_unit::DescriptorsExhausted exhausted;
    auto existing = ShardDb::open(dir.path(), 0);
    auto fresh = ShardDb::open(dir.path(), 1);
    exhausted.restore();

    REQUIRE_FALSE(existing.ok());
    CHECK(existing.error().code == base::ErrorCode::too_many_files);
    CHECK_THAT(existing.error().message, Catch::Contains("out of file descriptors"));
    REQUIRE_FALSE(fresh.ok());
    CHECK(fresh.error().code == base::ErrorCode::too_many_files);
    // Untouched, and it opens once descriptors are back.
    CHECK(ShardDb::open(dir.path(), 0).ok());
}
