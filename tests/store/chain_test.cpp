// Issue 28 in the store: the hash chain's encoding (pinned by values computed independently
// from docs/STORE.md's definition, in Python's hashlib), chaining of older files, and retention
// of a sealed shard (whole sealed prefixes, the anchor checkpoint kept) — each checked with the
// verifier (seal/verify_store.hpp).
#include <sodium.h>

#include "seal/checkpoint.hpp"
#include "seal/compare_copies.hpp"
#include "seal/verify_store.hpp"
#include "store/retention.hpp"
#include "store/row_chain.hpp"
#include "store_test_util.hpp"
#include "support/temp_dir.hpp"

using namespace store_test;
using eventd::store::ChainHead;
using test_support::event_row;
using test_support::guid;
using test_support::TempDir;
namespace seal = eventd::seal;
namespace store = eventd::store;

namespace {

std::string hex(const ChainHead& h) { return store::chain_hex(h); }

// The verification key of keys made for `dir`, small: 2-second epochs for an hour.
seal::PublicKey make_keys(const fs::path& dir) {
    seal::SetupOptions options;
    options.epoch_seconds = 2;
    options.years = 1.0 / 8766;
    auto key = seal::setup_keys(dir, options);
    INFO((key ? std::string() : key.error().message));
    REQUIRE(key.ok());
    auto parsed = seal::parse_verification_key(*key);
    REQUIRE(parsed.ok());
    return *parsed;
}

seal::StoreReport verify(const fs::path& dir, const seal::PublicKey& key) {
    seal::VerifyOptions options;
    options.key = key;
    options.now_ns = uint64_t(time(nullptr)) * 1'000'000'000u;
    auto report = seal::verify_store(dir, options);
    INFO((report ? std::string() : report.error().message));
    REQUIRE(report.ok());
    return *report;
}

std::string describe(const seal::StoreReport& report) {
    std::string out;
    for (const auto& f : report.files) {
        out += f.file + ": " + std::to_string(f.rows) + " rows, " + std::to_string(f.checkpoints) + " checkpoints";
        if (f.broken) out += "; broken: " + std::string(seal::kind_name(f.broken->kind)) + " at " +
                             std::to_string(f.broken->row) + ": " + f.broken->what;
        if (f.unsealed) out += "; unsealed from " + std::to_string(f.unsealed->row);
        out += "\n";
    }
    return out;
}

// One retention batch of `db`, REQUIREd to succeed.
uint64_t deleted(store::ShardDb& db, uint64_t cutoff_ns, uint32_t limit) {
    auto n = db.delete_oldest(cutoff_ns, limit);
    INFO((n ? std::string() : n.error().message));
    REQUIRE(n.ok());
    return *n;
}

uint64_t now_ns() { return uint64_t(time(nullptr)) * 1'000'000'000u; }

// `n` rows of (boot b0, cpu 0) with timestamps from `first_ts`, then a checkpoint, one commit.
void rows_then_checkpoint(store::ShardDb& db, seal::Sealer& sealer, uint64_t first_ts, uint64_t first_seq, int n) {
    REQUIRE(db.begin().ok());
    for (int i = 0; i < n; ++i) {
        REQUIRE(db.insert(event_row({.boot = guid(0xb0), .timestamp = first_ts + uint64_t(i), .cpu = 0,
                                     .sequence = first_seq + uint64_t(i)}))
                    .ok());
    }
    REQUIRE(seal::seal_shard(db, sealer, guid(0xb0), now_ns(), 60, false).ok());
    REQUIRE(db.commit().ok());
}

}  // namespace

TEST_CASE("the chain's encoding is the one docs/STORE.md defines", "[chain]") {
    store::FileId file_id;
    for (int i = 0; i < 16; ++i) file_id[i] = uint8_t(0xf0 + i);
    const ChainHead origin = store::chain_origin(file_id, 0);
    CHECK(hex(origin) == "2ce010e4791888e3de290b86f207b301d50323cce76a3c67c22c84d27eb44676");

    store::EventRow row;
    for (int i = 0; i < 16; ++i) row.boot_id[i] = uint8_t(i);
    row.timestamp = 1800000000123456789ull;
    row.cpu_id = 3;
    row.sequence = 42;
    row.origin_class = 1;
    row.event_type = "demo.click";
    row.effective_token = guid(0x11);
    row.process = guid(0x22);
    row.payload = std::vector<uint8_t>{0x81, 0xa1, 0x61, 0x01};
    const store::RowDigest digest = store::row_digest(row);
    CHECK(hex(digest) == "4318ebfea908f87a46f249c6339c2ccf2c0a666162a4871299c10fcddb3a77ef");
    CHECK(store::row_tag(digest) == store::RowTag{0x43, 0x18, 0xeb, 0xfe});

    // A synthetic row: NULL cpu, sequence, origin, identities and payload.
    store::EventRow bare;
    bare.boot_id = row.boot_id;
    bare.timestamp = 1800000000123456790ull;
    bare.event_type = "synthetic.x";
    CHECK(hex(store::row_digest(bare)) == "5b552419cb2d145ce2ddcc045a04f0ced3351b3928487bad134bf22d38299cc8");

    // One segment of rows 7 and 8 …
    store::SegmentHasher segment;
    segment.start(origin, 7);
    segment.add(digest);
    segment.add(store::row_digest(bare));
    CHECK(segment.first_id() == 7);
    CHECK(segment.last_id() == 8);
    CHECK(segment.tags() == std::vector<uint8_t>{0x43, 0x18, 0xeb, 0xfe, 0x5b, 0x55, 0x24, 0x19});
    const ChainHead head = segment.finish();
    CHECK(hex(head) == "95149450ab5fad3d2ad4dd093bd2f54f3f8974c710d85daeb3af5241f6f33ad3");
    CHECK_FALSE(segment.open());
    CHECK(segment.last_id() == 8);  // still readable: the writer records the segment after finish()
    // … is another head than two segments of one row each: where segments end is part of the chain.
    segment.start(origin, 7);
    segment.add(digest);
    const ChainHead first = segment.finish();
    CHECK(hex(first) == "b7200964814d827f35f8bc5d1e4984146545b6b7cc6b90e3558edf0588891d21");
    segment.start(first, 8);
    segment.add(store::row_digest(bare));
    CHECK(hex(segment.finish()) == "485449b3e8d0d47af2b43c505be360d7db03e5073cdfa98d6c920e8503a546f9");
    // The same rows under other ids link to another head.
    segment.start(origin, 9);
    segment.add(digest);
    segment.add(store::row_digest(bare));
    CHECK(segment.finish() != head);

    // The reader's form of the row hashes alike.
    store::StoredRow stored;
    stored.id = 7;
    stored.boot_id = std::span<const uint8_t>(row.boot_id.data(), 16);
    stored.timestamp = row.timestamp;
    stored.cpu_id = 3;
    stored.sequence = 42;
    stored.origin_class = 1;
    stored.event_type = row.event_type;
    stored.effective_token = std::span<const uint8_t>(row.effective_token->data(), 16);
    stored.process = std::span<const uint8_t>(row.process->data(), 16);
    stored.payload = std::span<const uint8_t>(*row.payload);
    CHECK(store::row_digest(stored) == digest);
}

namespace {

struct StoredSegment {
    int64_t first = 0;
    std::string head_hex, tags_hex;
};

// chain_segments as stored, by last_id.
std::map<int64_t, StoredSegment> stored_segments(RawDb& raw) {
    std::map<int64_t, StoredSegment> out;
    const auto n = raw.count("SELECT count(*) FROM chain_segments");
    for (int64_t i = 0; i < n; ++i) {
        const std::string at = " FROM chain_segments ORDER BY last_id LIMIT 1 OFFSET " + std::to_string(i);
        const int64_t last = raw.count("SELECT last_id" + at);
        out[last] = {raw.count("SELECT first_id" + at), raw.value("SELECT lower(hex(head))" + at),
                     raw.value("SELECT lower(hex(tags))" + at)};
    }
    return out;
}

std::string tag_hex(const store::EventRow& row) {
    const auto tag = store::row_tag(store::row_digest(row));
    return store::chain_hex(tag);
}

}  // namespace

TEST_CASE("each commit stores its rows' segment of the chain, and a checkpoint closes one", "[chain]") {
    TempDir dir;
    auto db = open_shard(dir.path());
    const store::FileId file_id = db->file_id();
    const auto r1 = event_row({.boot = guid(0xb0), .timestamp = 5, .cpu = 0, .sequence = 1});
    const auto r2 = event_row({.boot = guid(0xb0), .timestamp = 6, .cpu = 0, .sequence = 2});
    REQUIRE(db->begin().ok());
    REQUIRE(db->insert(r1).ok());
    REQUIRE(db->insert(r2).ok());
    CHECK(db->chain_head() == store::chain_origin(file_id, 0));  // the segment is still open
    REQUIRE(db->commit().ok());
    RawDb raw(dir / "shard-0000.db");
    store::SegmentHasher expected;
    expected.start(store::chain_origin(file_id, 0), 1);
    expected.add(store::row_digest(r1));
    expected.add(store::row_digest(r2));
    const ChainHead after_two = expected.finish();
    CHECK(db->chain_head() == after_two);
    auto segments = stored_segments(raw);
    REQUIRE(segments.size() == 1);
    CHECK(segments[2].first == 1);
    CHECK(segments[2].head_hex == hex(after_two));
    CHECK(segments[2].tags_hex == tag_hex(r1) + tag_hex(r2));
    CHECK(raw.value("SELECT value FROM metadata WHERE key = 'chain_head'") == "2:" + hex(after_two));

    // A digest brought with the row (made on a drain thread) is taken as it is: a wrong one is
    // what gets chained.
    auto r3 = event_row({.boot = guid(0xb0), .timestamp = 7, .cpu = 0, .sequence = 3});
    r3.content_digest = store::row_digest(r3);
    r3.content_digest->at(0) ^= 1;
    REQUIRE(db->begin().ok());
    REQUIRE(db->insert(r3).ok());
    // close_segment() (what a checkpoint signs) ends a segment inside the transaction.
    auto closed = db->close_segment();
    REQUIRE(closed.ok());
    expected.start(after_two, 3);
    expected.add(*r3.content_digest);
    CHECK(*closed == expected.finish());
    const auto r4 = event_row({.boot = guid(0xb0), .timestamp = 8, .cpu = 0, .sequence = 4});
    REQUIRE(db->insert(r4).ok());
    REQUIRE(db->commit().ok());
    segments = stored_segments(raw);
    REQUIRE(segments.size() == 3);
    CHECK(segments[3].first == 3);
    CHECK(segments[3].head_hex == hex(*closed));
    CHECK(segments[4].first == 4);

    // A rolled-back transaction leaves the head and the segments where the last commit put them.
    const ChainHead committed = db->chain_head();
    REQUIRE(db->begin().ok());
    REQUIRE(db->insert(event_row({.boot = guid(0xb0), .timestamp = 9, .cpu = 0, .sequence = 5})).ok());
    REQUIRE(db->close_segment().ok());
    db->rollback();
    CHECK(db->chain_head() == committed);
    CHECK(stored_segments(raw).size() == 3);
    db.reset();
    CHECK(open_shard(dir.path())->chain_head() == committed);
}

TEST_CASE("a shard from before chains gets chain_segments and a chain that starts after its last row", "[chain]") {
    TempDir dir;
    {
        auto db = open_shard(dir.path());
        REQUIRE(db->begin().ok());
        for (uint64_t i = 1; i <= 3; ++i)
            REQUIRE(db->insert(event_row({.boot = guid(0xb0), .timestamp = i, .cpu = 0, .sequence = i})).ok());
        REQUIRE(db->commit().ok());
    }
    {  // as an eventd before issue 28 left it
        RawDb raw(dir / "shard-0000.db");
        raw.exec("DROP TABLE chain_segments");
        raw.exec("DELETE FROM metadata WHERE key IN ('chain_origin', 'chain_head')");
    }
    auto db = open_shard(dir.path());
    RawDb raw(dir / "shard-0000.db");
    CHECK(raw.count("SELECT count(*) FROM sqlite_master WHERE name = 'chain_segments'") == 1);
    CHECK(raw.value("SELECT value FROM metadata WHERE key = 'chain_origin'") ==
          "3:" + hex(store::chain_origin(db->file_id(), 3)));
    CHECK(raw.count("SELECT count(*) FROM chain_segments") == 0);

    const auto key = make_keys(dir.path());
    auto sealer = seal::Sealer::load(dir.path());
    REQUIRE(sealer.ok());
    rows_then_checkpoint(*db, **sealer, 10, 4, 2);
    const auto report = verify(dir.path(), key);
    INFO(describe(report));
    REQUIRE(report.files.size() == 1);
    CHECK(report.fully_sealed());
    CHECK(report.files[0].pre_chain_rows == 3);
    CHECK(report.files[0].checkpoints == 1);
}

TEST_CASE("retention of a sealed shard deletes whole sealed prefixes and the rest still verifies", "[chain]") {
    TempDir dir;
    const auto key = make_keys(dir.path());
    auto sealer = seal::Sealer::load(dir.path());
    REQUIRE(sealer.ok());
    auto db = open_shard(dir.path());
    // Three sealed segments: rows 1-10 + checkpoint 11, rows 12-21 + checkpoint 22, rows 23-32
    // + checkpoint 33; then rows 34-35 unsealed. Event times 100.., 200.., 300.., 400..
    rows_then_checkpoint(*db, **sealer, 100, 1, 10);
    rows_then_checkpoint(*db, **sealer, 200, 11, 10);
    rows_then_checkpoint(*db, **sealer, 300, 21, 10);
    REQUIRE(db->begin().ok());
    for (uint64_t s = 31; s <= 32; ++s)
        REQUIRE(db->insert(event_row({.boot = guid(0xb0), .timestamp = 400 + s, .cpu = 0, .sequence = s})).ok());
    REQUIRE(db->commit().ok());
    RawDb raw(dir / "shard-0000.db");

    SECTION("without a cutoff: the first sealed segment, in batches, the checkpoint kept as anchor") {
        CHECK(raw.count("SELECT count(*) FROM chain_segments WHERE last_id <= 10") == 1);  // rows 1-10
        CHECK(deleted(*db, 0, 4) == 4);
        // The origin moved first: what is left before it is deleted next, however old. The
        // prefix's segments went with the first batch.
        CHECK(raw.value("SELECT value FROM metadata WHERE key = 'chain_origin'").starts_with("10:"));
        CHECK(raw.count("SELECT count(*) FROM chain_segments WHERE last_id <= 10") == 0);
        // Stopped here (eventd stopped between two batches), the store verifies: rows 5-10 are
        // outside the chain, counted as waiting for retention, not as rows from before chains.
        {
            const auto between = verify(dir.path(), key);
            INFO(describe(between));
            CHECK(between.intact());
            CHECK(between.files[0].awaiting_retention_rows == 6);
            CHECK(between.files[0].pre_chain_rows == 0);
        }
        while (raw.count("SELECT count(*) FROM events WHERE id <= 10") > 0) REQUIRE(deleted(*db, 0, 4) > 0);
        CHECK(raw.value("SELECT min(id) FROM events") == "11");
        auto report = verify(dir.path(), key);
        INFO(describe(report));
        CHECK(report.intact());
        CHECK(report.files[0].checkpoints == 3);
        // The next call cuts the next segment, the anchor of the first with it.
        REQUIRE(deleted(*db, 0, 100) == 11);
        CHECK(raw.value("SELECT min(id) FROM events") == "22");
        report = verify(dir.path(), key);
        INFO(describe(report));
        CHECK(report.intact());
        CHECK(report.files[0].unsealed);  // rows 34-35 are still unsealed, and not deleted
    }
    SECTION("with a cutoff: up to the last checkpoint written before it") {
        // Checkpoint rows carry the time they were sealed (now); the cutoff is after all three.
        REQUIRE(deleted(*db, now_ns() + 10'000'000'000ull, 1000) == 32);
        CHECK(raw.value("SELECT min(id) FROM events") == "33");
        CHECK(raw.value("SELECT min(first_id) FROM chain_segments") == "33");
        CHECK(deleted(*db, now_ns() + 10'000'000'000ull, 1000) == 0);  // nothing sealed is left before it
        const auto report = verify(dir.path(), key);
        INFO(describe(report));
        CHECK(report.intact());
        CHECK(raw.count("SELECT count(*) FROM events") == 3);
    }
    SECTION("a prefix deleted by other means is reported") {
        raw.exec("DELETE FROM events WHERE id <= 5");
        const auto report = verify(dir.path(), key);
        INFO(describe(report));
        REQUIRE(report.files[0].broken);
        CHECK(report.files[0].broken->kind == seal::FindingKind::missing_rows);
        CHECK(report.files[0].broken->row == 1);
    }
    SECTION("rows deleted up to a checkpoint with a forged origin are reported") {
        raw.exec("DELETE FROM events WHERE id <= 12");
        raw.exec("UPDATE metadata SET value = '12:" + hex(ChainHead{}) + "' WHERE key = 'chain_origin'");
        const auto report = verify(dir.path(), key);
        INFO(describe(report));
        REQUIRE(report.files[0].broken);
        CHECK(report.files[0].broken->row == 13);
    }
}

TEST_CASE("retention of an unsealed shard drops the segments of the rows it deleted", "[chain]") {
    TempDir dir;
    auto db = open_shard(dir.path());
    // Three commits: rows 1-3 (times 1-3), 4-6 (times 4-6), 7-9 (times 7-9).
    for (uint64_t first = 1; first <= 7; first += 3) {
        REQUIRE(db->begin().ok());
        for (uint64_t s = first; s < first + 3; ++s)
            REQUIRE(db->insert(event_row({.boot = guid(0xb0), .timestamp = s, .cpu = 0, .sequence = s})).ok());
        REQUIRE(db->commit().ok());
    }
    RawDb raw(dir / "shard-0000.db");
    REQUIRE(raw.count("SELECT count(*) FROM chain_segments") == 3);
    CHECK(deleted(*db, 5, 100) == 4);  // rows 1-4: the first segment is gone, the second half
    CHECK(raw.value("SELECT group_concat(last_id) FROM chain_segments") == "6,9");
    CHECK(deleted(*db, 0, 100) == 5);  // every row
    CHECK(raw.count("SELECT count(*) FROM chain_segments") == 0);
}

TEST_CASE("sealing begins afresh on a shard retention cut holes into before it was sealed", "[chain]") {
    TempDir dir;
    auto db = open_shard(dir.path());
    REQUIRE(db->begin().ok());
    for (uint64_t i = 1; i <= 6; ++i)
        REQUIRE(db->insert(event_row({.boot = guid(0xb0), .timestamp = 10 - i, .cpu = 0, .sequence = i})).ok());
    REQUIRE(db->commit().ok());
    REQUIRE(deleted(*db, 0, 2) == 2);  // unsealed: by timestamp, rows 5 and 6
    const auto key = make_keys(dir.path());
    auto sealer = seal::Sealer::load(dir.path());
    REQUIRE(db->restart_chain().ok());
    rows_then_checkpoint(*db, **sealer, 20, 7, 3);
    const auto report = verify(dir.path(), key);
    INFO(describe(report));
    CHECK(report.fully_sealed());
    CHECK(report.files[0].pre_chain_rows == 4);
}

namespace {
// Every checkpoint of the store in `dir`, as a collector would hold them after forwarding.
std::vector<seal::Checkpoint> checkpoints_of(const fs::path& dir) {
    RawDb raw(dir / "shard-0000.db");
    std::vector<seal::Checkpoint> out;
    sqlite3_stmt* stmt = nullptr;
    REQUIRE(sqlite3_prepare_v2(raw.get(), "SELECT payload FROM events WHERE event_type = 'synthetic.checkpoint'", -1,
                               &stmt, nullptr) == SQLITE_OK);
    while (sqlite3_step(stmt) == SQLITE_ROW) {
        const auto* p = static_cast<const uint8_t*>(sqlite3_column_blob(stmt, 0));
        auto c = seal::parse_checkpoint(std::span<const uint8_t>(p, size_t(sqlite3_column_bytes(stmt, 0))));
        REQUIRE(c);
        out.push_back(*c);
    }
    sqlite3_finalize(stmt);
    return out;
}
}  // namespace

TEST_CASE("a store rolled back to an older copy no longer holds the newest forwarded checkpoint", "[chain]") {
    TempDir dir, older;
    const auto key = make_keys(dir.path());
    {
        auto sealer = seal::Sealer::load(dir.path());
        REQUIRE(sealer.ok());
        auto db = open_shard(dir.path());
        rows_then_checkpoint(*db, **sealer, 100, 1, 5);
    }
    fs::copy(dir.path(), older.path(), fs::copy_options::overwrite_existing | fs::copy_options::recursive);
    {
        auto sealer = seal::Sealer::load(dir.path());
        auto db = open_shard(dir.path());
        rows_then_checkpoint(*db, **sealer, 200, 6, 5);
    }
    const auto forwarded = checkpoints_of(dir.path());
    REQUIRE(forwarded.size() == 2);

    auto same = seal::compare_with_forwarded(dir.path(), forwarded, key);
    REQUIRE(same.ok());
    CHECK(same->findings.empty());
    CHECK(same->forwarded == 2);
    CHECK(same->files == 1);

    // The older copy verifies on its own — and misses the checkpoint at row 12.
    CHECK(verify(older.path(), key).fully_sealed());
    auto rolled = seal::compare_with_forwarded(older.path(), forwarded, key);
    REQUIRE(rolled.ok());
    REQUIRE(rolled->findings.size() == 1);
    CHECK(rolled->findings[0].kind == seal::FindingKind::rolled_back);
    CHECK(rolled->findings[0].row == 12);

    // A checkpoint forged at the collector (bad signature) accuses nobody.
    auto forged = forwarded;
    forged.back().last_row += 100;
    auto ignored = seal::compare_with_forwarded(dir.path(), forged, key);
    REQUIRE(ignored.ok());
    CHECK(ignored->findings.empty());
    CHECK(ignored->other_key == 1);
}

TEST_CASE("a collector's store holds its hosts' checkpoints as rows: verified as rows, never retention anchors",
          "[chain]") {
    TempDir host, collector;
    const auto host_key = make_keys(host.path());
    {
        auto sealer = seal::Sealer::load(host.path());
        auto db = open_shard(host.path());
        rows_then_checkpoint(*db, **sealer, 100, 1, 3);
    }
    const auto forwarded = checkpoints_of(host.path());
    REQUIRE(forwarded.size() == 1);

    const auto key = make_keys(collector.path());
    auto sealer = seal::Sealer::load(collector.path());
    auto db = open_shard(collector.path());
    // Row 1 an event, row 2 the host's checkpoint as the collector stores it; rows 3-4, then the
    // collector's own checkpoint (row 5); rows 6-7 and checkpoint 8.
    REQUIRE(db->begin().ok());
    REQUIRE(db->insert(event_row({.boot = guid(0xc0), .timestamp = 50, .cpu = 0, .sequence = 1})).ok());
    REQUIRE(db->insert(seal::checkpoint_row(guid(0xc0), forwarded[0])).ok());
    REQUIRE(db->commit().ok());
    rows_then_checkpoint(*db, **sealer, 200, 1, 2);
    rows_then_checkpoint(*db, **sealer, 300, 3, 2);
    auto report = verify(collector.path(), key);
    INFO(describe(report));
    CHECK(report.fully_sealed());
    CHECK(report.files[0].checkpoints == 2);

    // The first sealed prefix ends at the collector's own checkpoint (row 5), not the host's (row 2).
    CHECK(deleted(*db, 0, 100) == 4);
    RawDb raw(collector / "shard-0000.db");
    CHECK(raw.value("SELECT min(id) FROM events") == "5");
    report = verify(collector.path(), key);
    INFO(describe(report));
    CHECK(report.fully_sealed());
    // The host's checkpoint verifies against the host's key, where it came from.
    CHECK(seal::check_signature(forwarded[0], host_key) == seal::SignatureCheck::valid);
}

TEST_CASE("retention's size limit cuts sealed prefixes of every shard, oldest first, keeping each anchor", "[chain]") {
    TempDir dir;
    const auto key = make_keys(dir.path());
    auto sealer = seal::Sealer::load(dir.path());
    REQUIRE(sealer.ok());
    auto zero = open_shard(dir.path(), 0);
    auto one = open_shard(dir.path(), 1);
    // Two segments each, shard 1's events older; the second segment ends at the last row.
    rows_then_checkpoint(*one, **sealer, 100, 1, 10);
    rows_then_checkpoint(*zero, **sealer, 200, 1, 10);
    rows_then_checkpoint(*one, **sealer, 300, 11, 10);
    rows_then_checkpoint(*zero, **sealer, 400, 11, 10);
    std::vector<store::ShardDb*> shards{zero.get(), one.get()};
    const store::RetentionShards access{2, [&](uint32_t i, const std::function<void(store::ShardDb&)>& f) {
                                            f(*shards[i]);
                                        }};
    // A limit nothing can meet: everything sealed goes but each shard's last checkpoint.
    const auto outcome = store::run_retention(access, store::RetentionLimits{0, 1}, store::RetentionOptions{.batch = 4});
    CHECK(outcome.deleted == 2 * 21);
    for (const char* file : {"shard-0000.db", "shard-0001.db"}) {
        RawDb raw(dir / file);
        CHECK(raw.value("SELECT min(id) FROM events") == "22");
        CHECK(raw.value("SELECT event_type FROM events WHERE id = 22") == "synthetic.checkpoint");
    }
    const auto report = verify(dir.path(), key);
    INFO(describe(report));
    CHECK(report.fully_sealed());
}
