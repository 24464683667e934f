// Forgeries that mend the chain (issue 28): the chain is not keyed, so an attacker who changes a
// row can recompute every link after it — the checkpoints are what he cannot redo. Without the
// key he leaves checkpoints that sealed another chain, or whose signature no longer verifies;
// with the key he finds on the machine (sealing.key, of the epoch eventd last signed in) he can
// re-sign them, but only as that later epoch — journald's CVE-2023-31439 — or dated in the
// future. Each attack works on its own copy of one stopped sealed store (seal_fixture.hpp).
// Rows are picked at random (the seed is printed; SEAL_RESEAL_SEED replays it).
#include <functional>
#include <random>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "base/hex.hpp"
#include "seal/checkpoint.hpp"
#include "seal/sealing_key.hpp"
#include "seal_fixture.hpp"
#include "store/shard_db.hpp"
#include "test_seed.hpp"

using namespace eventd::seal_it;
namespace seal = eventd::seal;
namespace store = eventd::store;

namespace {

std::mt19937_64 reseal_rng() {
    return std::mt19937_64(test_seed("SEAL_RESEAL_SEED", Catch::getResultCapture().getCurrentTestName()));
}

// The attacked shard and the place of the attack: a KMES row `x` between two checkpoints of the
// shard, `before` (the last checkpoint before x) and `after` (the first one after x).
struct Place {
    uint32_t index = 0;
    std::string file, other;
    int64_t x = 0;
    CheckpointRow before, after;
};

// x between the shard's checkpoints number `n` and n + 1 (0: its first checkpoint).
Place pick_place(std::mt19937_64& rng, StoreCopy& copy, size_t n = 0) {
    Place p;
    p.index = uint32_t(rng() % 2);
    p.file = store::shard_file_name(p.index);
    p.other = store::shard_file_name(1 - p.index);
    Db db(copy.shard(p.file));
    const auto cps = checkpoints(db);
    REQUIRE(cps.size() >= n + 3);
    p.before = cps[n];
    p.after = cps[n + 1];
    const auto ids = db.ids("SELECT id FROM events WHERE event_type NOT LIKE 'synthetic.%' AND id > " +
                            std::to_string(p.before.id) + " AND id < " + std::to_string(p.after.id));
    REQUIRE(!ids.empty());
    p.x = ids[rng() % ids.size()];
    return p;
}

void flip_payload_byte(std::mt19937_64& rng, Row& r) {
    REQUIRE(r.payload);
    REQUIRE(!r.payload->empty());
    (*r.payload)[rng() % r.payload->size()] ^= uint8_t(1 + rng() % 255);
}

void check_broken_at(const VerifyRun& v, const Place& p, const std::string& kind, int64_t row) {
    INFO(v);
    CHECK(v.exit_code == 1);
    CHECK(v.summary == "verify: FAILED: 1 of 2 files broken");
    const FileVerdict f = v.file(p.file);
    CHECK(f.status == FileVerdict::Status::broken);
    CHECK(f.kind == kind);
    CHECK(f.row == row);
    CHECK(v.file(p.other).status == FileVerdict::Status::verified);
}

// The attacker with a key: every row after checkpoint `p.before` is deleted and written again
// through eventd's own ShardDb (so the chain is right), `edit` applied first; every checkpoint
// among them is signed again by `sealer` through seal_shard, dated `time_of(original)`. The
// metadata (max_id_issued, chain_head, last_checkpoint) is set back to p.before first, as if
// the shard had ended there: the rows get their old ids again.
void reseal_after(const std::string& store_dir, const Place& p, seal::Sealer& sealer,
                  const std::function<void(std::vector<Row>&)>& edit,
                  const std::function<uint64_t(const seal::Checkpoint&)>& time_of) {
    std::vector<Row> rows;
    int64_t last = 0;
    {
        Db db(store_dir + "/" + p.file);
        rows = read_rows(db, "id > " + std::to_string(p.before.id));
        REQUIRE(!rows.empty());
        last = rows.back().id;
        cut_after(db, p.before.id);
        db.set_metadata("max_id_issued", std::to_string(p.before.id));
        db.set_metadata("last_checkpoint", base::hex_text(seal::checkpoint_hash(p.before.c)));
    }
    edit(rows);
    auto shard = store::ShardDb::open(store_dir, p.index);
    INFO((shard ? std::string() : shard.error().message));
    REQUIRE(shard);
    store::ShardDb& db = **shard;
    REQUIRE(db.begin());
    for (const Row& r : rows) {
        if (!r.checkpoint()) {
            REQUIRE(db.insert(r.event_row()));
            continue;
        }
        const auto c = seal::parse_checkpoint(*r.payload);
        REQUIRE(c);
        const auto sealed = seal::seal_shard(db, sealer, r.event_row().boot_id, time_of(*c), c->interval_s, c->final);
        INFO((sealed ? std::string() : sealed.error().message));
        REQUIRE(sealed);
    }
    REQUIRE(db.commit());
    REQUIRE(db.last_id() == last);  // every row back under its id
}

std::unique_ptr<seal::Sealer> load_sealer(const std::string& dir) {
    auto sealer = seal::Sealer::load(dir);
    INFO((sealer ? std::string() : sealer.error().message));
    REQUIRE(sealer);
    REQUIRE(*sealer);
    return std::move(*sealer);
}

}  // namespace

TEST_CASE("reseal: a changed row with the chain recomputed is re-chained rows from the checkpoint before it",
          "[reseal]") {
    auto rng = reseal_rng();
    const auto copy = copy_of_stopped_store();
    const Place p = pick_place(rng, *copy, 1 + rng() % 2);
    {
        Db db(copy->shard(p.file));
        Row r = read_rows(db, "id = " + std::to_string(p.x)).at(0);
        flip_payload_byte(rng, r);
        write_row(db, r);
        rechain(db);
    }
    INFO(p.file << ": row " << p.x << " changed, the chain recomputed; checkpoints at " << p.before.id << " and "
                << p.after.id);
    const VerifyRun v = verify(copy->store, stopped_store().key);
    // The links all fit now: the first checkpoint after the row sealed the old chain.
    check_broken_at(v, p, "re-chained rows", p.before.id + 1);
    CHECK_THAT(v.file(p.file).what,
               Catch::StartsWith("rows " + std::to_string(p.before.id + 1) + ".." + std::to_string(p.after.id - 1) +
                                 " were changed, inserted or removed and the chain recomputed"));
}

TEST_CASE("reseal: a deleted row with the later rows renumbered and the chain recomputed is a bad checkpoint",
          "[reseal]") {
    // Ids contiguous again and every link recomputed: the first checkpoint after the hole now
    // sits one row earlier than the row it names as its last.
    auto rng = reseal_rng();
    const auto copy = copy_of_stopped_store();
    const Place p = pick_place(rng, *copy, rng() % 3);
    {
        Db db(copy->shard(p.file));
        auto rows = read_rows(db, "id > " + std::to_string(p.x));
        db.exec("BEGIN IMMEDIATE");
        db.exec("DELETE FROM events WHERE id >= " + std::to_string(p.x));
        for (Row& r : rows) {
            --r.id;
            write_row(db, r);
        }
        db.set_metadata("max_id_issued", std::to_string(rows.back().id));
        db.exec("COMMIT");
        rechain(db);
    }
    INFO(p.file << ": row " << p.x << " deleted, the rows after it renumbered, the chain recomputed");
    check_broken_at(verify(copy->store, stopped_store().key), p, "bad checkpoint", p.after.id - 1);
}

TEST_CASE("reseal: checkpoints rewritten to the recomputed chain without the key are a bad signature", "[reseal]") {
    auto rng = reseal_rng();
    const auto copy = copy_of_stopped_store();
    const Place p = pick_place(rng, *copy, rng() % 3);
    {
        // Row x changed; every checkpoint's payload given the recomputed head; the chain
        // recomputed over the rewritten rows.
        Db db(copy->shard(p.file));
        Row r = read_rows(db, "id = " + std::to_string(p.x)).at(0);
        flip_payload_byte(rng, r);
        write_row(db, r);
        rechain(db, /*rewrite_checkpoint_heads=*/true);
    }
    INFO(p.file << ": row " << p.x << " changed, the chain and the checkpoints' heads recomputed");
    const VerifyRun v = verify(copy->store, stopped_store().key);
    check_broken_at(v, p, "bad signature", p.after.id);
    CHECK_THAT(v.file(p.file).what, Catch::EndsWith(": its signature does not verify"));
}

TEST_CASE("reseal: checkpoints re-signed with another store's keys are a bad signature", "[reseal]") {
    // The attacker makes sealing keys of his own (a real `eventctl seal --setup`) and reseals.
    auto rng = reseal_rng();
    const auto copy = copy_of_stopped_store();
    const Place p = pick_place(rng, *copy, rng() % 3);
    test_support::TempDir own;
    setup_sealing(own.str() + "/keys");
    const auto sealer = load_sealer(own.str() + "/keys");
    reseal_after(
        copy->store, p, *sealer,
        [&](std::vector<Row>& rows) {
            for (Row& r : rows)
                if (r.id == p.x) flip_payload_byte(rng, r);
        },
        [](const seal::Checkpoint& c) { return c.time_ns; });
    INFO(p.file << ": row " << p.x << " changed, resealed from checkpoint " << p.before.id << " with other keys");
    const VerifyRun v = verify(copy->store, stopped_store().key);
    check_broken_at(v, p, "bad signature", p.after.id);
    CHECK_THAT(v.file(p.file).what, Catch::Contains("its epoch key is not certified by this verification key"));
}

TEST_CASE("reseal: checkpoints re-signed with the key found on the machine are from a later epoch "
          "(CVE-2023-31439)",
          "[reseal]") {
    // sealing.key as eventd left it at its shutdown: the epoch of its final checkpoint. The
    // first checkpoint after the changed row was made two or more epochs (2 s each) earlier.
    auto rng = reseal_rng();
    const auto copy = copy_of_stopped_store();
    const Place p = pick_place(rng, *copy, 0);
    const auto sealer = load_sealer(copy->store);
    INFO("the key found is of epoch " << sealer->current_epoch() << "; the checkpoint after row " << p.x
                                      << " is of epoch " << p.after.c.signed_by.epoch);
    REQUIRE(p.after.c.schedule.epoch_at(p.after.c.time_ns) < sealer->current_epoch());
    reseal_after(
        copy->store, p, *sealer,
        [&](std::vector<Row>& rows) {
            for (Row& r : rows)
                if (r.id == p.x) flip_payload_byte(rng, r);
        },
        [](const seal::Checkpoint& c) { return c.time_ns; });  // dated as they were
    INFO(p.file << ": row " << p.x << " changed, resealed from checkpoint " << p.before.id);
    const VerifyRun v = verify(copy->store, stopped_store().key);
    check_broken_at(v, p, "checkpoint from a later epoch", p.after.id);
    CHECK_THAT(v.file(p.file).what,
               Catch::Contains("is signed with the key of epoch " + std::to_string(sealer->current_epoch())));
}

TEST_CASE("reseal: checkpoints re-signed with a key evolved ahead and dated in the future are from a later epoch",
          "[reseal]") {
    // The attacker hashes the seed forward himself (any later epoch's key is his) and dates the
    // checkpoints so that their epoch fits: 10 minutes from now, more than the 5 the verifier
    // allows for a clock stepped back.
    auto rng = reseal_rng();
    const auto copy = copy_of_stopped_store();
    const Place p = pick_place(rng, *copy, rng() % 3);
    const auto sealer = load_sealer(copy->store);
    const uint64_t future = now_ns() + 600ull * 1'000'000'000u;
    uint64_t n = 0;
    reseal_after(
        copy->store, p, *sealer,
        [&](std::vector<Row>& rows) {
            for (Row& r : rows)
                if (r.id == p.x) flip_payload_byte(rng, r);
        },
        [&](const seal::Checkpoint&) { return future + 1'000'000u * n++; });
    REQUIRE(sealer->current_epoch() == sealer->schedule().epoch_at(future + 1'000'000u * (n - 1)));
    INFO(p.file << ": row " << p.x << " changed, resealed from checkpoint " << p.before.id << " 10 min ahead");
    const VerifyRun v = verify(copy->store, stopped_store().key);
    check_broken_at(v, p, "checkpoint from a later epoch", p.after.id);
}

TEST_CASE("reseal: a shard truncated back to a checkpoint with its metadata mended verifies (by design)",
          "[reseal]") {
    // docs/STORE.md §8 "What it cannot see": the shard then looks as it did right after that
    // checkpoint, like a rolled-back copy; only checkpoints kept off the host can show it. The
    // other files keep their final checkpoints. Asserted so that a verifier that learns to see
    // it (or one that stops accepting an intact shard) is noticed here.
    auto rng = reseal_rng();
    const auto copy = copy_of_stopped_store();
    const Place p = pick_place(rng, *copy, 1 + rng() % 2);
    {
        Db db(copy->shard(p.file));
        cut_after(db, p.before.id);
        db.set_metadata("max_id_issued", std::to_string(p.before.id));
        db.set_metadata("last_checkpoint", base::hex_text(seal::checkpoint_hash(p.before.c)));
    }
    INFO(p.file << ": truncated after its checkpoint at row " << p.before.id);
    const VerifyRun v = verify(copy->store, stopped_store().key);
    INFO(v);
    CHECK(v.exit_code == 0);
    CHECK(v.file(p.file).status == FileVerdict::Status::verified);
    CHECK(v.file(p.file).rows == uint64_t(p.before.id));
}

TEST_CASE("reseal: with a key of the right epoch (an early backup of sealing.key) a reseal verifies", "[reseal]") {
    // The control for the cases above: the same reseal, with a key the attacker should not
    // have — sealing.key as it was before eventd first moved it forward, as a backup of the store
    // directory taken then holds it — passes the verifier. So what they report comes from the
    // key's epoch alone; and a copy of the store directory (sealing.key included) taken at
    // epoch E lets whoever gets it later reseal anything from E on: forward security holds only
    // while no older sealing.key survives anywhere.
    auto rng = reseal_rng();
    const auto copy = copy_of_stopped_store();
    const Place p = pick_place(rng, *copy, 2);  // its next checkpoint 3 s or more after the setup: epoch 1 or later
    const auto sealer = load_sealer(stopped_store().early_keys);
    REQUIRE(sealer->current_epoch() == 0);
    REQUIRE(p.after.c.signed_by.epoch > 0);  // eventd had moved its key forward since
    reseal_after(
        copy->store, p, *sealer,
        [&](std::vector<Row>& rows) {
            for (Row& r : rows)
                if (r.id == p.x) flip_payload_byte(rng, r);
        },
        [](const seal::Checkpoint& c) { return c.time_ns; });
    INFO(p.file << ": row " << p.x << " changed, resealed from checkpoint " << p.before.id
                << " with the epoch-0 key hashed forward");
    {
        Db forged(copy->shard(p.file));
        Db original(stopped_store().store + "/" + p.file);
        const std::string row = "id = " + std::to_string(p.x);
        CHECK(read_rows(forged, row).at(0).payload != read_rows(original, row).at(0).payload);  // changed
    }
    const VerifyRun v = verify(copy->store, stopped_store().key);
    INFO(v);
    CHECK(v.exit_code == 0);
    CHECK(v.file(p.file).status == FileVerdict::Status::verified);
}
