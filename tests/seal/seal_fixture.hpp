// What the tamper-evidence tests (issue 28) share: a store sealed by a real eventd, the real
// `eventctl seal --setup` and `eventctl verify` run as processes with their output parsed, and
// the attacker's tools — a read-write SQLite connection on a shard file, rows read back with
// every column, the hash chain recomputed as anyone can (it is not keyed: store/row_chain.hpp),
// and the checkpoints parsed (seal/checkpoint.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "seal/checkpoint.hpp"
#include "store/event_row.hpp"
#include "store/row_chain.hpp"
#include "support/temp_dir.hpp"

struct sqlite3;

namespace eventd::seal_it {

inline constexpr const char* kCheckpointType = "synthetic.checkpoint";

// `eventctl seal --setup --store <store> --epoch-seconds 2 --years 0.001` (the directory is
// made first when missing): REQUIREs exit 0 and returns the verification key, the last line of
// stdout; *stdout_text gets all of stdout.
std::string setup_sealing(const std::string& store, std::string* stdout_text = nullptr);

// One file's line of `eventctl verify`:
//   "<file>: N rows, M checkpoints[, …]: verified"
//   "<file>: N rows, M checkpoints: BROKEN: <kind>[ at row R][ (time)]: <what>"
//   "<file>: N rows, M checkpoints: verified through row S; <what>"
struct FileVerdict {
    std::string line;  // as printed
    uint64_t rows = 0;
    uint64_t checkpoints = 0;
    enum class Status { verified, broken, unsealed, unparsed } status = Status::unparsed;
    std::string kind;          // broken: the kind's name (seal/verify_store.cpp kind_name)
    int64_t row = 0;           // broken: "at row R" (0 when the line names no row)
    int64_t sealed_through = 0;  // unsealed: "verified through row S"
    std::string what;          // the sentence after the kind (or after "row S; ")
};

struct VerifyRun {
    int exit_code = -1;
    std::string out, err;
    std::map<std::string, FileVerdict> files;  // by file name
    std::string summary;                       // the last line of stdout
    // The verdict of `file`; a verdict with status unparsed (and an empty line) when absent.
    FileVerdict file(const std::string& name) const;
};
std::ostream& operator<<(std::ostream& out, const VerifyRun& run);  // for INFO

// `eventctl verify --store <store> --key <key>` (the real binary, $EVENTCTL).
VerifyRun verify(const std::string& store, const std::string& key);

// Every regular file of the store directory `from` (shards, their -wal/-shm, eventd-meta.db,
// the sealing key and certificates) copied into `to`, which is made.
void copy_store(const std::string& from, const std::string& to);

// The attacker's connection: read-write on a shard file (eventd may have it open: busy timeout).
class Db {
public:
    explicit Db(const std::string& path);
    ~Db();
    Db(const Db&) = delete;
    Db& operator=(const Db&) = delete;

    sqlite3* raw() const { return db_; }
    void exec(const std::string& sql);  // REQUIREs success
    std::optional<std::string> text(const std::string& sql);  // first column of the first row
    int64_t integer(const std::string& sql);                  // REQUIREs a row
    std::vector<int64_t> ids(const std::string& sql);         // first column of every row
    std::string metadata(const std::string& key);             // REQUIREs the key
    void set_metadata(const std::string& key, const std::string& value);

private:
    sqlite3* db_ = nullptr;
    std::string path_;
};

// One row with every column, owned.
struct Row {
    int64_t id = 0;
    std::vector<uint8_t> boot_id;
    uint64_t timestamp = 0;
    std::optional<int64_t> cpu_id, sequence, origin_class;
    std::string event_type;
    std::optional<std::vector<uint8_t>> effective_token, true_token, process, payload;

    bool checkpoint() const { return event_type == kCheckpointType; }
    bool synthetic() const { return event_type.rfind("synthetic.", 0) == 0; }
    store::StoredRow view() const;      // for row_digest
    store::EventRow event_row() const;  // for ShardDb::insert
};

// Rows of the shard in id order, `where` (SQL, may be empty) applied.
std::vector<Row> read_rows(Db& db, const std::string& where = "");
// INSERT OR REPLACE the row with every column.
void write_row(Db& db, const Row& row);

// What an attacker without the key does after changing rows: recompute the chain from metadata
// chain_origin over the rows as they are (store/row_chain.hpp) and write chain_segments and
// metadata chain_head. Segments end where eventd's ended (cut at the last row), before each of
// the file's own checkpoints and at the last row, so that an unchanged stretch keeps its heads.
// With `rewrite_checkpoint_heads`, each such checkpoint's payload is first given the recomputed
// head before it (which its signature then no longer covers). Ids must be contiguous. Returns
// the head after the last row.
store::ChainPoint rechain(Db& db, bool rewrite_checkpoint_heads = false);
// Rows after `last` deleted and the chain recomputed (rechain) to end at `last`: the shard as
// if eventd had stopped there. Metadata max_id_issued and last_checkpoint stay as they were.
store::ChainPoint cut_after(Db& db, int64_t last);

struct CheckpointRow {
    int64_t id = 0;
    seal::Checkpoint c;
};
// Every checkpoint row of the shard, parsed (REQUIREs that each parses).
std::vector<CheckpointRow> checkpoints(Db& db);

// A store sealed by a real eventd, stopped cleanly (final checkpoints): a kmes-shimd with its
// generators (2 rings, hence 2 shards) and an eventd with CheckpointIntervalSeconds 1, run until
// every shard holds at least 5 checkpoints. Made once per test process, on first use, in its own
// directory (the daemons are gone by then), and checked: it verifies with exit 0 — so that what
// an attack's copy reports comes from the attack.
struct SealedStore {
    test_support::TempDir dir;
    std::string store;  // <dir>/events
    std::string key;    // the verification key
    std::vector<std::string> shards;  // shard-0000.db, shard-0001.db
    // sealing.key and sealing.certs as the setup left them (epoch 0), copied aside before
    // eventd first started: a backup of the store directory taken then.
    std::string early_keys;
};
const SealedStore& stopped_store();

// A fresh copy of stopped_store() in a new directory of its own.
struct StoreCopy {
    test_support::TempDir dir;
    std::string store;  // <dir>/events
    std::string shard(const std::string& file) const { return store + "/" + file; }
};
std::unique_ptr<StoreCopy> copy_of_stopped_store();

// Nanoseconds since the epoch, now.
uint64_t now_ns();

// The active shard files of `store` (shard-NNNN.db, not quarantined ones), sorted.
std::vector<std::string> active_shards(const std::string& store);
// max(id) of every active shard (read-only, as a query reads: eventd may be running).
std::map<std::string, int64_t> last_ids(const std::string& store);
// Checkpoint rows of a shard file with an id above `after` (read-only).
int64_t count_checkpoints(const std::string& path, int64_t after = 0);
// Wait (REQUIRE, within 30 s) until `shards` active shards exist and each holds at least `n`
// checkpoints above its id in `after` (0 for a file not named there). `log` (eventd's, say) is
// shown when it does not happen.
void wait_checkpoints(const std::string& store, size_t shards, int64_t n,
                      const std::map<std::string, int64_t>& after = {},
                      const std::function<std::string()>& log = {});

}  // namespace eventd::seal_it
