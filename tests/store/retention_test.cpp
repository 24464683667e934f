// Retention deletes: bounded batches of the oldest rows (PSD-008 §3.4).
#include <algorithm>
#include <cerrno>
#include <numeric>
#include <random>

#include "store_test_util.hpp"
#include "support/temp_dir.hpp"

using namespace store_test;
using test_support::event_row;
using test_support::guid;
using test_support::TempDir;

namespace {

// 100 rows with timestamps 1..100, inserted in shuffled order (ids do not follow time).
std::unique_ptr<eventd::store::ShardDb> shard_with_100_rows(const fs::path& dir) {
    auto db = open_shard(dir);
    std::vector<uint64_t> timestamps(100);
    std::iota(timestamps.begin(), timestamps.end(), 1);
    std::shuffle(timestamps.begin(), timestamps.end(), std::mt19937(7));
    REQUIRE(db->begin().ok());
    for (size_t i = 0; i < timestamps.size(); ++i) {
        REQUIRE(
            db->insert(event_row({.boot = guid(0xb0), .timestamp = timestamps[i], .cpu = 0, .sequence = i + 1})).ok());
    }
    REQUIRE(db->account(guid(0xb0), 0, 1, 100).ok());
    REQUIRE(db->commit().ok());
    return db;
}

}  // namespace

TEST_CASE("delete_oldest without a cutoff removes at most limit rows, oldest first", "[retention]") {
    TempDir dir;
    auto db = shard_with_100_rows(dir.path());
    auto deleted = db->delete_oldest(0, 10);
    REQUIRE(deleted.ok());
    CHECK(*deleted == 10);
    RawDb raw(dir / "shard-0000.db");
    CHECK(raw.count("SELECT count(*) FROM events") == 90);
    CHECK(raw.count("SELECT min(timestamp) FROM events") == 11);
}

TEST_CASE("delete_oldest with a cutoff keeps rows at or after it", "[retention]") {
    TempDir dir;
    auto db = shard_with_100_rows(dir.path());
    auto deleted = db->delete_oldest(50, 1000);
    REQUIRE(deleted.ok());
    CHECK(*deleted == 49);
    auto again = db->delete_oldest(50, 1000);
    REQUIRE(again.ok());
    CHECK(*again == 0);
    RawDb raw(dir / "shard-0000.db");
    CHECK(raw.count("SELECT min(timestamp) FROM events") == 50);
}

TEST_CASE("delete_oldest with a cutoff still removes at most limit rows", "[retention]") {
    TempDir dir;
    auto db = shard_with_100_rows(dir.path());
    auto deleted = db->delete_oldest(50, 20);
    REQUIRE(deleted.ok());
    CHECK(*deleted == 20);
    RawDb raw(dir / "shard-0000.db");
    CHECK(raw.count("SELECT min(timestamp) FROM events") == 21);
}

TEST_CASE("retention deletes leave the sequence state alone", "[retention]") {
    TempDir dir;
    auto db = shard_with_100_rows(dir.path());
    REQUIRE(db->delete_oldest(0, 1000).ok());
    RawDb raw(dir / "shard-0000.db");
    CHECK(raw.count("SELECT count(*) FROM events") == 0);
    CHECK(raw.count("SELECT count(*) FROM sequence_state") == 1);
    CHECK(db->sequence_state().at({guid(0xb0), 0}).highest() == 100);
}

TEST_CASE("delete_oldest is refused inside the writer's open transaction", "[retention]") {
    TempDir dir;
    auto db = open_shard(dir.path());
    REQUIRE(db->begin().ok());
    auto deleted = db->delete_oldest(0, 10);
    REQUIRE_FALSE(deleted.ok());
    CHECK(deleted.error().code == base::ErrorCode::invalid);
    db->rollback();
}

TEST_CASE("oldest_timestamp is the smallest timestamp, or nothing when empty", "[retention]") {
    TempDir dir;
    {
        auto empty = open_shard(dir.path(), 1);
        auto oldest = empty->oldest_timestamp();
        REQUIRE(oldest.ok());
        CHECK_FALSE(oldest->has_value());
    }
    auto db = shard_with_100_rows(dir.path());
    auto oldest = db->oldest_timestamp();
    REQUIRE(oldest.ok());
    CHECK(*oldest == std::optional<uint64_t>(1));
}

TEST_CASE("used_bytes falls when retention deletes rows, while the file keeps its size", "[retention]") {
    TempDir dir;
    auto db = shard_with_100_rows(dir.path());
    REQUIRE(db->begin().ok());
    for (uint64_t s = 101; s <= 300; ++s) {
        auto row = event_row({.boot = guid(0xb0), .timestamp = s, .cpu = 0, .sequence = s});
        row.payload = std::vector<uint8_t>(2000, 0x11);
        REQUIRE(db->insert(row).ok());
    }
    REQUIRE(db->commit().ok());
    db->checkpoint_if_needed(1);
    const uint64_t used_before = db->used_bytes();
    const uint64_t file_before = fs::file_size(dir / "shard-0000.db");
    REQUIRE(db->delete_oldest(0, 1000).ok());
    db->checkpoint_if_needed(1);
    CHECK(db->used_bytes() < used_before / 4);
    CHECK(fs::file_size(dir / "shard-0000.db") == file_before);  // no automatic VACUUM (§3.4)
}
