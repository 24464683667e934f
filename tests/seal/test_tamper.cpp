// Row edits on a stopped sealed store (issue 28): someone with the machine opens a shard with
// SQLite and changes, deletes, reorders or adds rows. Every attack works on its own copy of one
// store that a real eventd sealed and stopped (seal_fixture.hpp: it verifies with exit 0), and
// `eventctl verify` must name the kind of break and the first row concerned — and leave the other
// shard verified. Rows are picked at random (the seed is printed; SEAL_TAMPER_SEED replays it).
#include <random>
#include <tuple>
#include <utility>

#include <catch2/catch.hpp>

#include "seal_fixture.hpp"
#include "test_seed.hpp"

using namespace eventd::seal_it;

namespace {

using Status = FileVerdict::Status;

std::mt19937_64 tamper_rng() {
    return std::mt19937_64(test_seed("SEAL_TAMPER_SEED", Catch::getResultCapture().getCurrentTestName()));
}

// One of the two shards, at random: the attacked one; the other must stay verified.
struct Target {
    std::string file;
    std::string other;
};
Target pick_shard(std::mt19937_64& rng) {
    const auto& shards = stopped_store().shards;
    const size_t i = rng() % shards.size();
    return {shards[i], shards[(i + 1) % shards.size()]};
}

// KMES rows (not synthetic) strictly between the shard's first and last checkpoint.
std::vector<int64_t> inner_event_ids(Db& db) {
    const std::string cps = std::string("FROM events WHERE event_type = '") + kCheckpointType + "'";
    auto ids = db.ids("SELECT id FROM events WHERE event_type NOT LIKE 'synthetic.%' AND id > (SELECT min(id) " + cps +
                      ") AND id < (SELECT max(id) " + cps + ") ORDER BY id");
    REQUIRE(ids.size() > 100);
    return ids;
}

int64_t pick(std::mt19937_64& rng, const std::vector<int64_t>& ids) { return ids[rng() % ids.size()]; }

// The verdict of the attacked file is a break of `kind` at `row`; the other file verifies.
void check_broken(const VerifyRun& v, const Target& t, const std::string& kind, int64_t row) {
    INFO(v);
    CHECK(v.exit_code == 1);
    CHECK(v.summary == "verify: FAILED: 1 of 2 files broken");
    const FileVerdict f = v.file(t.file);
    CHECK(f.status == Status::broken);
    CHECK(f.kind == kind);
    CHECK(f.row == row);
    CHECK(v.file(t.other).status == Status::verified);
}

// The 4-byte tag chain_segments keeps for `row` (store/row_chain.hpp), in hex.
std::string tag_hex(Db& db, int64_t row) {
    const std::string id = std::to_string(row);
    const auto tag = db.text("SELECT hex(substr(tags, (" + id + " - first_id) * 4 + 1, 4)) FROM chain_segments "
                             "WHERE first_id <= " + id + " AND last_id >= " + id);
    REQUIRE(tag);
    return *tag;
}

// Row `row`'s tag in its segment replaced by `tag` (8 hex digits), every other byte kept. SQLite's
// || makes TEXT of blobs, and substr() counts a TEXT's UTF-8 characters, not its bytes: without
// the CAST a second set_tag in the same segment cut the tags at other bytes than the row's
// (any lead byte 0xc0-0xff before it swallowed the continuation bytes after it) — another
// tampering than the case names, which the verifier rightly reported as a changed row or a
// malformed segment. The tags stay a BLOB, as eventd writes them; the REQUIREs say so.
void set_tag(Db& db, int64_t row, const std::string& tag) {
    const std::string id = std::to_string(row), at = "(" + id + " - first_id) * 4";
    const std::string where = " WHERE first_id <= " + id + " AND last_id >= " + id;
    const int64_t bytes = db.integer("SELECT length(tags) FROM chain_segments" + where);
    db.exec("UPDATE chain_segments SET tags = CAST(substr(tags, 1, " + at + ") || x'" + tag + "' || substr(tags, " +
            at + " + 5) AS BLOB)" + where);
    REQUIRE(db.text("SELECT typeof(tags) FROM chain_segments" + where) == "blob");
    REQUIRE(db.integer("SELECT length(tags) FROM chain_segments" + where) == bytes);
    REQUIRE(tag_hex(db, row) == tag);
}

}  // namespace

TEST_CASE("tamper: one changed payload byte is a changed row at that row's id", "[tamper]") {
    auto rng = tamper_rng();
    const auto copy = copy_of_stopped_store();
    const Target t = pick_shard(rng);
    int64_t x = 0;
    size_t at = 0;
    {
        Db db(copy->shard(t.file));
        x = pick(rng, inner_event_ids(db));
        Row r = read_rows(db, "id = " + std::to_string(x)).at(0);
        REQUIRE(r.payload);
        REQUIRE(!r.payload->empty());
        at = rng() % r.payload->size();
        (*r.payload)[at] ^= uint8_t(1 + rng() % 255);
        write_row(db, r);  // its `chain` link as it was
    }
    INFO(t.file << ": row " << x << ", payload byte " << at);
    check_broken(verify(copy->store, stopped_store().key), t, "changed row", x);
}

TEST_CASE("tamper: a changed timestamp is a changed row at that row's id", "[tamper]") {
    auto rng = tamper_rng();
    const auto copy = copy_of_stopped_store();
    const Target t = pick_shard(rng);
    int64_t x = 0, shift = 0;
    {
        Db db(copy->shard(t.file));
        x = pick(rng, inner_event_ids(db));
        shift = int64_t(1 + rng() % 3'600'000'000'000ull) * (rng() % 2 ? 1 : -1);
        db.exec("UPDATE events SET timestamp = timestamp + " + std::to_string(shift) + " WHERE id = " +
                std::to_string(x));
    }
    INFO(t.file << ": row " << x << " moved by " << shift << " ns");
    check_broken(verify(copy->store, stopped_store().key), t, "changed row", x);
}

TEST_CASE("tamper: any other changed column, or the row's tag in its segment, is a changed row at that id",
          "[tamper]") {
    auto rng = tamper_rng();
    const Target t = pick_shard(rng);
    // Each change keeps the column's type (a value eventd could have written).
    const std::vector<std::pair<std::string, std::string>> changes = {
        {"boot_id", "boot_id = randomblob(16)"},
        {"cpu_id", "cpu_id = cpu_id + 1"},
        {"sequence", "sequence = sequence + 1"},
        {"origin_class", "origin_class = (origin_class + 1) % 256"},
        {"event_type", "event_type = event_type || 'x'"},
        {"process_guid", "process_guid = randomblob(16)"},
        {"payload (set NULL)", "payload = NULL"},
        // Not a column: the 4 bytes chain_segments keeps of the row's digest (store/row_chain.hpp).
        {"tag", ""},
    };
    for (const auto& [column, set] : changes) {
        const auto copy = copy_of_stopped_store();
        int64_t x = 0;
        {
            Db db(copy->shard(t.file));
            x = pick(rng, inner_event_ids(db));
            const std::string id = std::to_string(x);
            if (!set.empty()) {
                db.exec("UPDATE events SET " + set + " WHERE id = " + id);
            } else {
                set_tag(db, x, tag_hex(db, x) == "00000000" ? "00000001" : "00000000");
            }
        }
        INFO(t.file << ": " << column << " of row " << x);
        check_broken(verify(copy->store, stopped_store().key), t, "changed row", x);
    }
}

TEST_CASE("tamper: deleted rows in the middle are missing rows from the first deleted id", "[tamper]") {
    auto rng = tamper_rng();
    const Target t = pick_shard(rng);
    for (int count : {1, 1 + int(rng() % 5)}) {
        const auto copy = copy_of_stopped_store();
        int64_t x = 0;
        {
            Db db(copy->shard(t.file));
            x = pick(rng, inner_event_ids(db));
            db.exec("DELETE FROM events WHERE id >= " + std::to_string(x) + " AND id < " + std::to_string(x + count));
        }
        INFO(t.file << ": rows " << x << ".." << x + count - 1 << " deleted");
        const VerifyRun v = verify(copy->store, stopped_store().key);
        check_broken(v, t, "missing rows", x);
        const std::string what = v.file(t.file).what;
        CHECK_THAT(what, Catch::StartsWith(count == 1 ? "row " + std::to_string(x) + " is missing (deleted) before row " +
                                                           std::to_string(x + 1)
                                                     : "rows " + std::to_string(x) + ".." +
                                                           std::to_string(x + count - 1) +
                                                           " are missing (deleted) before row " +
                                                           std::to_string(x + count)));
    }
}

TEST_CASE("tamper: deleted last rows are missing at the end, from the first deleted id", "[tamper]") {
    auto rng = tamper_rng();
    const auto copy = copy_of_stopped_store();
    const Target t = pick_shard(rng);
    int64_t k = 0, max_id = 0;
    {
        Db db(copy->shard(t.file));
        k = pick(rng, inner_event_ids(db));  // kept: rows up to k
        max_id = db.integer("SELECT max(id) FROM events");
        db.exec("DELETE FROM events WHERE id > " + std::to_string(k));
    }
    INFO(t.file << ": rows after " << k << " deleted");
    const VerifyRun v = verify(copy->store, stopped_store().key);
    check_broken(v, t, "missing rows", k + 1);
    CHECK(v.file(t.file).what == "rows " + std::to_string(k + 1) + ".." + std::to_string(max_id) +
                                     " missing at the end (the file issued ids up to " + std::to_string(max_id) + ")");
}

TEST_CASE("tamper: deleted last rows with max_id_issued and chain_head fixed leave the cut tail unsealed",
          "[tamper]") {
    // The attacker makes the metadata agree with the shorter file. What was cut went with the
    // checkpoints after it, eventd's final one among them: the kept rows after the last kept
    // checkpoint are chained but unsealed (exit 3, "intact"), which a stopped store never is —
    // eventd seals the last row at shutdown. The verifier names exactly where the seal ends.
    auto rng = tamper_rng();
    const auto copy = copy_of_stopped_store();
    const Target t = pick_shard(rng);
    int64_t k = 0, sealed = 0;
    {
        Db db(copy->shard(t.file));
        k = pick(rng, inner_event_ids(db));  // a KMES row: never a checkpoint
        sealed = db.integer("SELECT max(id) FROM events WHERE event_type = '" + std::string(kCheckpointType) +
                            "' AND id < " + std::to_string(k));
        cut_after(db, k);
        db.set_metadata("max_id_issued", std::to_string(k));
    }
    INFO(t.file << ": rows after " << k << " deleted, metadata mended");
    const VerifyRun v = verify(copy->store, stopped_store().key);
    INFO(v);
    CHECK(v.exit_code == 3);
    CHECK_THAT(v.summary, Catch::StartsWith("verify: intact, "));
    const FileVerdict f = v.file(t.file);
    CHECK(f.status == Status::unsealed);
    CHECK(f.sealed_through == sealed);
    CHECK(f.what == "rows " + std::to_string(sealed + 1) + ".." + std::to_string(k) +
                        " chained but not sealed yet (after the last checkpoint; eventd seals every "
                        "CheckpointIntervalSeconds and at shutdown)");
    CHECK(v.file(t.other).status == Status::verified);
}

namespace {

// Two KMES rows a < b at most 51 apart, strictly between the first and last checkpoint.
std::pair<int64_t, int64_t> near_pair(std::mt19937_64& rng, Db& db) {
    const auto ids = inner_event_ids(db);
    const size_t i = rng() % (ids.size() - 60);
    return {ids[i], ids[i + 1 + rng() % 50]};
}

// Row b's columns written as row a; with `both`, a's as row b too (swapped).
void move_rows(Db& db, int64_t a, int64_t b, bool both) {
    Row ra = read_rows(db, "id = " + std::to_string(a)).at(0);
    Row rb = read_rows(db, "id = " + std::to_string(b)).at(0);
    std::swap(ra.id, rb.id);
    write_row(db, rb);
    if (both) write_row(db, ra);
}

}  // namespace

TEST_CASE("tamper: two rows swapped are reordered rows naming both ids; one row copied over another is moved",
          "[tamper]") {
    auto rng = tamper_rng();
    const Target t = pick_shard(rng);
    for (const bool swapped : {true, false}) {
        const auto copy = copy_of_stopped_store();
        int64_t a = 0, b = 0;
        {
            Db db(copy->shard(t.file));
            std::tie(a, b) = near_pair(rng, db);
            move_rows(db, a, b, swapped);
        }
        INFO(t.file << ": row " << b << (swapped ? " swapped with row " : " copied over row ") << a);
        const VerifyRun v = verify(copy->store, stopped_store().key);
        check_broken(v, t, "reordered rows", a);
        CHECK(v.file(t.file).what ==
              (swapped ? "rows " + std::to_string(a) + " and " + std::to_string(b) + " are in each other's place (reordered)"
                       : "row " + std::to_string(a) + " holds what eventd stored as row " + std::to_string(b) +
                             " (rows moved)"));
    }
}

TEST_CASE("tamper: two rows swapped with their tags is a changed chain segment from the first row's segment",
          "[tamper]") {
    // The attacker also swaps the rows' tags in chain_segments: every row then fits its tag, and
    // the place is known to the segment (a commit's rows), whose link no longer fits. Whether a
    // and b share a segment or not, a's is the first whose link fails: the same finding.
    auto rng = tamper_rng();
    const Target t = pick_shard(rng);
    const auto copy = copy_of_stopped_store();
    int64_t a = 0, b = 0, segment_start = 0;
    {
        Db db(copy->shard(t.file));
        std::tie(a, b) = near_pair(rng, db);
        move_rows(db, a, b, true);
        const std::string tag_a = tag_hex(db, a), tag_b = tag_hex(db, b);
        set_tag(db, a, tag_b);
        set_tag(db, b, tag_a);
        segment_start = db.integer("SELECT first_id FROM chain_segments WHERE first_id <= " + std::to_string(a) +
                                   " AND last_id >= " + std::to_string(a));
    }
    INFO(t.file << ": rows " << a << " and " << b << " swapped with their tags");
    const VerifyRun v = verify(copy->store, stopped_store().key);
    check_broken(v, t, "changed chain segment", segment_start);
    CHECK_THAT(v.file(t.file).what, Catch::Contains("are not what their segment of the chain recorded"));
}

namespace {

// A forged row after the last: a copy of the last KMES row with the next sequence, now.
Row forged_row(Db& db, int64_t id) {
    Row r = read_rows(db, "id = (SELECT max(id) FROM events WHERE event_type NOT LIKE 'synthetic.%')").at(0);
    r.id = id;
    r.timestamp = now_ns();
    if (r.sequence) *r.sequence += 1;
    return r;
}

}  // namespace

TEST_CASE("tamper: a forged row after eventd's final checkpoint, correctly chained, is an inserted row",
          "[tamper]") {
    // Metadata updated as eventd would (max_id_issued, chain_head): the row is chained, so only
    // the seal tells it apart — it follows a final (shutdown) checkpoint unsealed, which no eventd
    // leaves (the first commit of every start carries a checkpoint).
    auto rng = tamper_rng();
    const auto copy = copy_of_stopped_store();
    const Target t = pick_shard(rng);
    int64_t m = 0;
    {
        Db db(copy->shard(t.file));
        m = db.integer("SELECT max(id) FROM events");
        REQUIRE(read_rows(db, "id = " + std::to_string(m)).at(0).checkpoint());  // the final checkpoint
        REQUIRE(checkpoints(db).back().c.final);
        const auto head = eventd::store::parse_chain_point(db.metadata("chain_head"));
        REQUIRE(head);
        REQUIRE(head->id == m);
        write_row(db, forged_row(db, m + 1));
        db.set_metadata("max_id_issued", std::to_string(m + 1));
        rechain(db);
    }
    INFO(t.file << ": row " << m + 1 << " forged, chained, metadata updated");
    const VerifyRun v = verify(copy->store, stopped_store().key);
    check_broken(v, t, "inserted row", m + 1);
    CHECK(v.file(t.file).what ==
          "row " + std::to_string(m + 1) +
              " follows eventd's shutdown checkpoint unsealed: written while eventd was stopped, or by an eventd that "
              "could not seal (keys ended or removed: see its log) — eventd seals the first commit of every start");
}

TEST_CASE("tamper: a forged row after the last one is an inserted row without a segment, a changed row with a wrong "
          "tag",
          "[tamper]") {
    auto rng = tamper_rng();
    const Target t = pick_shard(rng);
    for (const bool with_segment : {false, true}) {
        const auto copy = copy_of_stopped_store();
        int64_t m = 0;
        {
            Db db(copy->shard(t.file));
            m = db.integer("SELECT max(id) FROM events");
            write_row(db, forged_row(db, m + 1));
            db.set_metadata("max_id_issued", std::to_string(m + 1));
            if (with_segment) {
                const std::string id = std::to_string(m + 1);
                db.exec("INSERT INTO chain_segments (last_id, first_id, head, tags) VALUES (" + id + ", " + id +
                        ", randomblob(32), randomblob(4))");
            }
        }
        INFO(t.file << ": row " << m + 1 << " forged " << (with_segment ? "with a random segment" : "without a segment")
                    << ", max_id_issued updated");
        const VerifyRun v = verify(copy->store, stopped_store().key);
        check_broken(v, t, with_segment ? "changed row" : "inserted row", m + 1);
        if (!with_segment) CHECK_THAT(v.file(t.file).what, Catch::Contains("is in no segment of the chain"));
    }
}

TEST_CASE("tamper: a forged row beyond max_id_issued is an inserted row at its id, chained or not", "[tamper]") {
    // The metadata left as eventd wrote it: max_id_issued names the final checkpoint, so a row
    // after it has an id eventd never issued (docs/STORE.md §8, check 1) — whether or not the
    // attacker chained it correctly.
    auto rng = tamper_rng();
    const Target t = pick_shard(rng);
    for (const bool chained : {false, true}) {
        const auto copy = copy_of_stopped_store();
        int64_t m = 0;
        {
            Db db(copy->shard(t.file));
            m = db.integer("SELECT max(id) FROM events");
            REQUIRE(db.metadata("max_id_issued") == std::to_string(m));
            write_row(db, forged_row(db, m + 1));
            if (chained) rechain(db);
        }
        INFO(t.file << ": row " << m + 1 << " forged " << (chained ? "with" : "without") << " its chain segment");
        const VerifyRun v = verify(copy->store, stopped_store().key);
        check_broken(v, t, "inserted row", m + 1);
        CHECK_THAT(v.file(t.file).what, Catch::EndsWith("eventd issued ids up to " + std::to_string(m) + " only"));
    }
}

TEST_CASE("tamper: deleted first rows are missing rows from row 1", "[tamper]") {
    // A prefix cut anywhere but where retention cuts (before a checkpoint, with the origin
    // moved to its head: docs/STORE.md §8 "Retention of a sealed shard").
    auto rng = tamper_rng();
    const auto copy = copy_of_stopped_store();
    const Target t = pick_shard(rng);
    int64_t k = 0;
    {
        Db db(copy->shard(t.file));
        k = pick(rng, inner_event_ids(db));
        db.exec("DELETE FROM events WHERE id <= " + std::to_string(k));
    }
    INFO(t.file << ": rows 1.." << k << " deleted");
    const VerifyRun v = verify(copy->store, stopped_store().key);
    check_broken(v, t, "missing rows", 1);
    CHECK_THAT(v.file(t.file).what, Catch::StartsWith("rows 1.." + std::to_string(k) + " are missing (deleted) before row " +
                                                      std::to_string(k + 1)));
}
