// The writer's transaction: prepared INSERT, sequence accounting in the same transaction,
// rollback, WAL checkpoints and sizes (PSD-008 §2.4, DESIGN.md §4.3).
#include <cerrno>

#include "store_test_util.hpp"
#include "support/temp_dir.hpp"

using namespace store_test;
using eventd::store::EventRow;
using eventd::store::ShardDb;
using test_support::event_row;
using test_support::guid;
using test_support::TempDir;

namespace {
using Rows = std::vector<std::vector<std::string>>;
using Ranges = std::map<uint64_t, uint64_t>;

std::string hex(const Guid& g) {
    static const char* digits = "0123456789ABCDEF";
    std::string s;
    for (uint8_t b : g) {
        s += digits[b >> 4];
        s += digits[b & 0xf];
    }
    return s;
}
}  // namespace

TEST_CASE("a committed KMES row stores every header field in its column", "[write]") {
    TempDir dir;
    auto db = open_shard(dir.path());
    EventRow row = event_row({.boot = guid(0xb0), .timestamp = 1'700'000'000'123'456'789ULL, .cpu = 7, .sequence = 42});
    row.origin_class = 2;
    row.event_type = "kacs.access_check";
    row.payload = std::vector<uint8_t>{0x81, 0xa1, 'k', 0x01};
    REQUIRE(db->begin().ok());
    REQUIRE(db->insert(row).ok());
    REQUIRE(db->commit().ok());

    RawDb raw(dir / "shard-0000.db");
    CHECK(raw.rows("SELECT id, hex(boot_id), timestamp, cpu_id, sequence, origin_class, event_type, "
                   "hex(effective_token_guid), hex(true_token_guid), hex(process_guid), hex(payload) FROM events") ==
          Rows{{"1", hex(guid(0xb0)), "1700000000123456789", "7", "42", "2", "kacs.access_check", hex(guid(0xe1)),
                hex(guid(0x71)), hex(guid(0x9a)), "81A16B01"}});
}

// A synthetic row (PSD-008 §2.6): no CPU, sequence, origin class, identity nor payload.
const EventRow kSyntheticStartup = event_row({.boot = guid(0xb0),
                                              .timestamp = 5,
                                              .cpu = {},
                                              .sequence = {},
                                              .origin_class = {},
                                              .type = "synthetic.startup",
                                              .effective_token = {},
                                              .true_token = {},
                                              .process = {},
                                              .payload = {}});

TEST_CASE("a synthetic row stores NULL for every absent field", "[write]") {
    TempDir dir;
    auto db = open_shard(dir.path());
    const EventRow& row = kSyntheticStartup;
    REQUIRE(db->begin().ok());
    REQUIRE(db->insert(row).ok());
    REQUIRE(db->commit().ok());

    RawDb raw(dir / "shard-0000.db");
    CHECK(raw.rows("SELECT typeof(cpu_id), typeof(sequence), typeof(origin_class), typeof(effective_token_guid), "
                   "typeof(true_token_guid), typeof(process_guid), typeof(payload) FROM events") ==
          Rows{{"null", "null", "null", "null", "null", "null", "null"}});
}

TEST_CASE("a present but empty payload is stored as an empty BLOB, not NULL", "[write]") {
    TempDir dir;
    auto db = open_shard(dir.path());
    EventRow row = event_row({.boot = guid(0xb0), .timestamp = 1, .cpu = 0, .sequence = 1});
    row.payload = std::vector<uint8_t>{};
    REQUIRE(db->begin().ok());
    REQUIRE(db->insert(row).ok());
    REQUIRE(db->commit().ok());
    RawDb raw(dir / "shard-0000.db");
    CHECK(raw.rows("SELECT typeof(payload), length(payload) FROM events") == Rows{{"blob", "0"}});
}

TEST_CASE("commit stores the rows and their accounted ranges together", "[write]") {
    TempDir dir;
    const Guid boot = guid(0xb0);
    auto db = open_shard(dir.path());
    commit_range(*db, boot, 3, 1, 50);

    CHECK(db->sequence_state().at({boot, 3}).ranges() == Ranges{{1, 50}});
    RawDb raw(dir / "shard-0000.db");
    CHECK(raw.count("SELECT count(*) FROM events") == 50);
    CHECK(raw.rows("SELECT hex(boot_id), cpu_id, first_sequence, last_sequence FROM sequence_state") ==
          Rows{{hex(boot), "3", "1", "50"}});
}

TEST_CASE("rollback leaves neither rows nor ranges", "[write]") {
    TempDir dir;
    const Guid boot = guid(0xb0);
    auto db = open_shard(dir.path());
    REQUIRE(db->begin().ok());
    REQUIRE(db->insert(event_row({.boot = boot, .timestamp = 1, .cpu = 0, .sequence = 1})).ok());
    REQUIRE(db->account(boot, 0, 1, 1).ok());
    db->rollback();

    CHECK_FALSE(db->in_transaction());
    CHECK(db->sequence_state().empty());
    RawDb raw(dir / "shard-0000.db");
    CHECK(raw.count("SELECT count(*) FROM events") == 0);
    CHECK(raw.count("SELECT count(*) FROM sequence_state") == 0);

    // The ranges of the rolled-back transaction do not leak into the next one.
    commit_range(*db, boot, 0, 2, 2);
    CHECK(db->sequence_state().at({boot, 0}).ranges() == Ranges{{2, 2}});
    CHECK(raw.rows("SELECT first_sequence, last_sequence FROM sequence_state") == Rows{{"2", "2"}});
}

TEST_CASE("ranges accounted in consecutive commits coalesce into one row", "[write]") {
    TempDir dir;
    const Guid boot = guid(0xb0);
    auto db = open_shard(dir.path());
    commit_range(*db, boot, 0, 1, 100);
    commit_range(*db, boot, 0, 101, 200);

    RawDb raw(dir / "shard-0000.db");
    CHECK(raw.rows("SELECT cpu_id, first_sequence, last_sequence FROM sequence_state") == Rows{{"0", "1", "200"}});
    CHECK(db->sequence_state().at({boot, 0}).ranges() == Ranges{{1, 200}});
}

TEST_CASE("after a reopen new ranges still coalesce with the stored ones", "[write]") {
    TempDir dir;
    const Guid boot = guid(0xb0);
    {
        auto db = open_shard(dir.path());
        commit_range(*db, boot, 0, 1, 100);
    }
    auto db = open_shard(dir.path());
    commit_range(*db, boot, 0, 101, 200);
    RawDb raw(dir / "shard-0000.db");
    CHECK(raw.rows("SELECT first_sequence, last_sequence FROM sequence_state") == Rows{{"1", "200"}});
}

TEST_CASE("a range filling the hole between two stored ranges leaves one row", "[write]") {
    TempDir dir;
    const Guid boot = guid(0xb0);
    auto db = open_shard(dir.path());
    commit_range(*db, boot, 0, 1, 10);
    commit_range(*db, boot, 0, 21, 30);
    commit_range(*db, boot, 0, 41, 50);
    RawDb raw(dir / "shard-0000.db");
    CHECK(raw.count("SELECT count(*) FROM sequence_state") == 3);

    commit_range(*db, boot, 0, 11, 20);
    CHECK(raw.rows("SELECT first_sequence, last_sequence FROM sequence_state ORDER BY first_sequence") ==
          Rows{{"1", "30"}, {"41", "50"}});
}

TEST_CASE("several ranges accounted in one transaction are stored coalesced", "[write]") {
    TempDir dir;
    const Guid boot = guid(0xb0);
    auto db = open_shard(dir.path());
    REQUIRE(db->begin().ok());
    REQUIRE(db->account(boot, 0, 1, 50).ok());
    REQUIRE(db->account(boot, 0, 51, 60).ok());
    REQUIRE(db->account(boot, 0, 70, 80).ok());
    REQUIRE(db->commit().ok());
    RawDb raw(dir / "shard-0000.db");
    CHECK(raw.rows("SELECT first_sequence, last_sequence FROM sequence_state ORDER BY first_sequence") ==
          Rows{{"1", "60"}, {"70", "80"}});
}

TEST_CASE("ranges of different CPUs and boots are kept apart", "[write]") {
    TempDir dir;
    auto db = open_shard(dir.path());
    commit_range(*db, guid(0xb0), 0, 1, 10);
    commit_range(*db, guid(0xb0), 1, 11, 20);
    commit_range(*db, guid(0xb1), 0, 11, 20);
    RawDb raw(dir / "shard-0000.db");
    CHECK(raw.rows("SELECT hex(boot_id), cpu_id, first_sequence, last_sequence FROM sequence_state "
                   "ORDER BY boot_id, cpu_id") == Rows{{hex(guid(0xb0)), "0", "1", "10"},
                                                       {hex(guid(0xb0)), "1", "11", "20"},
                                                       {hex(guid(0xb1)), "0", "11", "20"}});
    CHECK(db->sequence_state().size() == 3);
}

TEST_CASE("calls outside their transaction are refused", "[write]") {
    TempDir dir;
    auto db = open_shard(dir.path());
    CHECK(db->insert(event_row({.boot = guid(1), .timestamp = 1, .cpu = 0, .sequence = 1})).error().code ==
          base::ErrorCode::invalid);
    CHECK(db->account(guid(1), 0, 1, 1).error().code == base::ErrorCode::invalid);
    CHECK(db->commit().error().code == base::ErrorCode::invalid);
    REQUIRE(db->begin().ok());
    CHECK(db->begin().error().code == base::ErrorCode::invalid);
    CHECK(db->account(guid(1), 0, 5, 4).error().code == base::ErrorCode::invalid);
    db->rollback();
}

TEST_CASE("checkpoint_if_needed moves a WAL past the threshold into the database", "[write][checkpoint]") {
    TempDir dir;
    auto db = open_shard(dir.path());
    commit_range(*db, guid(0xb0), 0, 1, 2000);
    const int pages = db->wal_pages();
    REQUIRE(pages > 20);

    db->checkpoint_if_needed(pages + 1);  // below the threshold: nothing happens
    CHECK(db->wal_pages() == pages);
    db->checkpoint_if_needed(20);
    CHECK(db->wal_pages() == 0);

    commit_range(*db, guid(0xb0), 0, 2001, 2001);  // the WAL restarts from its beginning
    CHECK(db->wal_pages() < 10);
    RawDb raw(dir / "shard-0000.db");
    CHECK(raw.count("SELECT count(*) FROM events") == 2001);
}

TEST_CASE("checkpoint_if_needed does not wait for a reader and retries later", "[write][checkpoint]") {
    TempDir dir;
    auto db = open_shard(dir.path());
    commit_range(*db, guid(0xb0), 0, 1, 10);
    RawDb reader(dir / "shard-0000.db", SQLITE_OPEN_READONLY);
    reader.exec("BEGIN");
    CHECK(reader.count("SELECT count(*) FROM events") == 10);  // holds its snapshot

    commit_range(*db, guid(0xb0), 0, 11, 2000);
    db->checkpoint_if_needed(20);  // cannot copy frames the reader's snapshot predates
    CHECK(db->wal_pages() >= 20);

    reader.exec("COMMIT");
    db->checkpoint_if_needed(20);
    CHECK(db->wal_pages() == 0);
}

TEST_CASE("size_bytes counts the database file and its WAL", "[write]") {
    TempDir dir;
    auto db = open_shard(dir.path());
    commit_range(*db, guid(0xb0), 0, 1, 500);
    const uint64_t expected = fs::file_size(dir / "shard-0000.db") + fs::file_size(dir / "shard-0000.db-wal");
    CHECK(db->size_bytes() == expected);
    CHECK(fs::file_size(dir / "shard-0000.db-wal") > 0);
}

TEST_CASE("a collector's duplicate check: accounted sequences here, in the open transaction and elsewhere", "[write]") {
    using Parts = std::vector<std::pair<uint64_t, uint64_t>>;
    TempDir dir;
    auto db = open_shard(dir.path());
    const Guid boot = guid(0xb0);
    REQUIRE(db->begin().ok());
    REQUIRE(db->account(boot, 1, 1, 10).ok());
    REQUIRE(db->commit().ok());
    REQUIRE(db->begin().ok());
    REQUIRE(db->account(boot, 1, 15, 15).ok());  // not committed yet: still a duplicate within the batch
    eventd::store::SequenceState elsewhere;
    elsewhere[{boot, 1}].add(20, 30);
    CHECK(db->unaccounted(boot, 1, 5, 5, nullptr).empty());
    CHECK(db->unaccounted(boot, 1, 15, 15, nullptr).empty());
    CHECK(db->unaccounted(boot, 1, 8, 25, nullptr) == Parts{{11, 14}, {16, 25}});
    CHECK(db->unaccounted(boot, 1, 8, 25, &elsewhere) == Parts{{11, 14}, {16, 19}});
    CHECK(db->unaccounted(boot, 2, 5, 5, &elsewhere) == Parts{{5, 5}});  // another CPU
    CHECK(db->unaccounted(guid(0xb1), 1, 5, 5, &elsewhere) == Parts{{5, 5}});  // another boot
    // accounted(): the same answers, one sequence at a time and for ranges.
    for (uint64_t s = 0; s <= 32; ++s) {
        INFO("sequence " << s);
        CHECK(db->accounted(boot, 1, s, s, &elsewhere) == db->unaccounted(boot, 1, s, s, &elsewhere).empty());
        CHECK(db->accounted(boot, 1, s, s, nullptr) == db->unaccounted(boot, 1, s, s, nullptr).empty());
    }
    CHECK(db->accounted(boot, 1, 20, 30, &elsewhere));
    CHECK_FALSE(db->accounted(boot, 1, 9, 11, &elsewhere));
    CHECK_FALSE(db->accounted(boot, 2, 5, 5, &elsewhere));
    CHECK_FALSE(db->accounted(guid(0xb1), 1, 5, 5, &elsewhere));
    db->rollback();
}

TEST_CASE("a collector's duplicate check of a record without a sequence: an identical stored row", "[write]") {
    TempDir dir;
    auto db = open_shard(dir.path());
    EventRow row = kSyntheticStartup;
    row.payload = std::vector<uint8_t>{0x81, 0xa1, 'k', 0x01};
    auto same = [&](const EventRow& r) {
        auto found = db->contains_same(r);
        REQUIRE(found);
        return *found;
    };
    REQUIRE(db->begin().ok());
    CHECK_FALSE(same(row));
    REQUIRE(db->insert(row).ok());
    CHECK(same(row));  // the open transaction's rows count
    REQUIRE(db->commit().ok());
    CHECK(same(row));
    EventRow other = row;
    other.payload = std::vector<uint8_t>{0x80};
    CHECK_FALSE(same(other));
    other = row;
    other.cpu_id = 0;
    CHECK_FALSE(same(other));
    other = row;
    other.payload.reset();
    CHECK_FALSE(same(other));
    other.payload = std::vector<uint8_t>{};  // empty, not NULL
    CHECK_FALSE(same(other));
    // Issue 40: the collector's record of a rejected message names the run that rejected it; a
    // redelivery after a crash comes to another run, and is the same record all the same.
    other = row;
    other.boot_id = guid(0xb2);
    CHECK_FALSE(same(other));
    auto found = db->contains_same(other, /*any_boot=*/true);
    REQUIRE(found);
    CHECK(*found);
    other.timestamp += 1;  // another message (its own stream time): not the same
    found = db->contains_same(other, true);
    REQUIRE(found);
    CHECK_FALSE(*found);
}
