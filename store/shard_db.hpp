// One shard database (PSD-008 §3.1–§3.2): `shard-NNNN.db` in EventStorePath, WAL,
// synchronous=FULL, the §3.1 schema, plus this implementation's `sequence_state` table.
//
//   events(…)                                            -- the columns: event_columns.hpp,
//                                                           drawn and listed there once
//   idx_events_timestamp ON events(timestamp)            -- the only index at creation (§3.1.3)
//   metadata(key TEXT PRIMARY KEY, value TEXT NOT NULL)  -- schema_version '1', created_at ISO 8601
//   chain_segments, metadata chain_origin / chain_head / last_checkpoint -- the hash chain
//                                                           (row_chain.hpp, docs/STORE.md)
//   sequence_state(boot_id BLOB NOT NULL, cpu_id INTEGER NOT NULL,
//                  first_sequence INTEGER NOT NULL, last_sequence INTEGER NOT NULL,
//                  PRIMARY KEY (boot_id, cpu_id, first_sequence)) WITHOUT ROWID
//     -- accounted sequence ranges of this shard, coalesced, updated in the same
//        transaction as the rows (and gap records) they cover (DESIGN.md §4.3)
//
// Exactly one ShardDb (one read-write connection) per shard file, owned by its writer thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "event_row.hpp"
#include "row_chain.hpp"
#include "base/result.hpp"
#include "sequence_ranges.hpp"

struct sqlite3;
struct sqlite3_stmt;

namespace eventd::store {

using base::Error;
using base::Result;
using base::Status;

inline constexpr int kSchemaVersion = 1;

// "shard-0003.db"
std::string shard_file_name(uint32_t index);

class ShardDb {
public:
    // Open shard `index` in `dir` for writing; create it (§3.2 creation order) if absent.
    // Error if it exists with an unknown schema_version or a broken structure, or SQLite
    // cannot open it (the caller then quarantines it, DESIGN.md §8).
    static Result<std::unique_ptr<ShardDb>> open(const std::filesystem::path& dir, uint32_t index);
    ~ShardDb();
    ShardDb(const ShardDb&) = delete;
    ShardDb& operator=(const ShardDb&) = delete;

    uint32_t index() const { return index_; }
    const std::filesystem::path& path() const { return path_; }
    // This shard's sequence_state as loaded at open and extended by every commit.
    const SequenceState& sequence_state() const { return state_; }

    // One transaction: begin(), insert()…, account()…, commit() — or rollback() on failure.
    Status begin();
    Status insert(const EventRow& row);  // the prepared INSERT (§2.4.5)
    // Mark [first, last] of (boot, cpu) as accounted for in this transaction.
    Status account(const kmes::Guid& boot_id, uint16_t cpu_id, uint64_t first, uint64_t last);
    // A collector's de-duplication (eventd/collector/, shard_writer.hpp), inside a transaction:
    // the parts of [first, last] of (boot, cpu) neither committed, nor accounted in it so far,
    // nor in `elsewhere` (other files' state); whether a row with `row`'s timestamp, boot, type,
    // cpu and payload is stored already (for records without a sequence), the open
    // transaction's rows included.
    std::vector<std::pair<uint64_t, uint64_t>> unaccounted(const kmes::Guid& boot_id, uint16_t cpu_id,
                                                           uint64_t first, uint64_t last,
                                                           const SequenceState* elsewhere) const;
    // Whether unaccounted() is empty, without building it for one sequence (first == last: a
    // KMES event, the collector's every record but gaps).
    bool accounted(const kmes::Guid& boot_id, uint16_t cpu_id, uint64_t first, uint64_t last,
                   const SequenceState* elsewhere) const;
    // Whether an identical row is stored (a collector's record without a sequence). With
    // `any_boot`, a row of any boot id counts: the collector's own record of a rejected message
    // carries the run that rejected it, and a redelivery after a crash comes to another run.
    Result<bool> contains_same(const EventRow& row, bool any_boot = false);
    Status commit();  // the durability boundary (§2.4.1); on failure the transaction is rolled back
    void rollback();

    // PASSIVE checkpoint once the WAL has passed `threshold_pages` (§2.4.4); never blocks.
    void checkpoint_if_needed(int threshold_pages = 1000);

    // Retention (§3.4): delete at most `limit` of the oldest rows with timestamp < cutoff
    // (or simply the oldest when cutoff is 0). Returns rows deleted.
    // A sealed shard (issue 28) loses only whole sealed prefixes, so that what remains still
    // verifies: the rows before a checkpoint (one whose time is before the cutoff; without a
    // cutoff, the first that has rows before it), the checkpoint itself kept as the anchor the
    // chain starts from (chain_origin moves to the row before it, with the head it signed).
    // Rows from before the chain (pre-chain) go by timestamp as ever. Unsealed rows stay
    // until a checkpoint covers them.
    Result<uint64_t> delete_oldest(uint64_t cutoff_ns, uint32_t limit);
    // Retention's size step (§3.4 step 2): as delete_oldest with `bound` (rows older than every
    // other shard's oldest), except that a sealed shard cuts its next sealed prefix whatever its
    // times — a bound from another shard would find no checkpoint before it.
    Result<uint64_t> free_oldest(uint64_t bound_ns, uint32_t limit);
    // Bytes of the database file plus its WAL.
    uint64_t size_bytes() const;
    // Bytes of live pages ((page_count − freelist_count) × page_size): what retention's byte
    // limit measures. Deleting rows lowers it at once, while the file shrinks only by VACUUM.
    uint64_t used_bytes() const;
    // Smallest `timestamp` in `events`, nullopt when empty: lets retention find the globally
    // oldest rows across shards (§3.4 step 2). Uses idx_events_timestamp.
    Result<std::optional<uint64_t>> oldest_timestamp();

    bool in_transaction() const;

    // The hash chain (row_chain.hpp). Every insert() adds its row to the open segment; commit()
    // closes it. chain_head(): the head after the last closed segment.
    const FileId& file_id() const { return file_id_; }
    const ChainHead& chain_head() const { return head_; }
    // The head after every row inserted so far, for a checkpoint to sign (it signs the head
    // before its own row): closes the open segment, recorded with the open transaction.
    Result<ChainHead> close_segment();
    int64_t last_id() const { return next_id_ - 1; }
    // The hash of the last checkpoint sealed into this shard (seal/checkpoint.hpp), nullopt
    // before the first one; set_last_checkpoint() records a new one with the open transaction.
    const std::optional<std::string>& last_checkpoint() const { return last_checkpoint_; }
    Status set_last_checkpoint(const std::string& hash_hex);
    // Sealing begins on a shard that was never sealed: its chain starts afresh after its last
    // row (the rows before are reported as from before the chain), since retention may have
    // deleted rows of it anywhere. Outside a transaction; nothing happens to an empty chain.
    Status restart_chain();

    // Secondary indexes (PSD-008 §3.3, secondary_index.hpp): the names of this shard's
    // idx_events_* indexes other than idx_events_timestamp, sorted.
    Result<std::vector<std::string>> secondary_indexes();
    // One CREATE INDEX / DROP INDEX, outside any transaction. `cancelled` is asked every ~1000
    // SQLite VM steps; when it says yes the statement stops, its partial work is rolled back,
    // and the error is ErrorCode::cancelled.
    Status run_index_statement(const std::string& sql, const std::function<bool()>& cancelled);
    // Frames in the WAL as of the last commit (sqlite3_wal_hook); reset by a full checkpoint.
    int wal_pages() const { return wal_pages_; }

private:
    ShardDb() = default;
    Status prepare_statements();
    Status open_chain();
    int save_metadata(const char* key, const std::string& value);  // an SQLite result code
    Result<uint64_t> delete_by_timestamp(uint64_t cutoff_ns, uint32_t limit);  // unsealed retention
    Result<uint64_t> cut_sealed_prefix(uint64_t cutoff_ns, uint32_t limit);    // sealed retention
    Status write_ranges(const BootCpu& key, const SequenceRanges& ranges);

    sqlite3* db_ = nullptr;
    sqlite3_stmt* insert_ = nullptr;
    sqlite3_stmt* delete_ranges_ = nullptr;  // sequence_state rows of one key inside [first, last]
    sqlite3_stmt* insert_range_ = nullptr;   // one sequence_state row
    sqlite3_stmt* delete_before_ = nullptr;  // retention with a cutoff
    sqlite3_stmt* delete_oldest_ = nullptr;  // retention without a cutoff
    sqlite3_stmt* oldest_ = nullptr;
    sqlite3_stmt* save_max_id_ = nullptr;
    sqlite3_stmt* find_same_ = nullptr;  // contains_same()
    // Row ids are never reused within a file (a stream cursor names "every row up to id N",
    // store_position.hpp): SQLite would number the next row max(id) + 1, reusing ids whenever
    // retention deleted the row holding the largest (an old timestamp committed late), or 1 in
    // an emptied table. So the writer numbers rows itself from the largest id ever issued,
    // kept in metadata `max_id_issued` by the same transaction that commits the rows.
    int64_t next_id_ = 1;            // for the next insert()
    int64_t committed_next_id_ = 1;  // next_id_ as of the last commit (rollback returns to it)
    int wal_pages_ = 0;
    uint32_t index_ = 0;
    FileId file_id_{};
    // The chain starts after row origin_id_: the start of the file or of its chaining
    // (derived from the file id), or the row before a checkpoint retention kept as its anchor.
    int64_t origin_id_ = 0;
    bool origin_by_retention_ = false;
    ChainHead head_{};            // after the last closed segment (row next_id_ - 1 when none is open)
    SegmentHasher segment_;       // the open transaction's rows since the last close
    ChainHead committed_head_{};  // as of the last commit (rollback returns to it)
    std::optional<std::string> last_checkpoint_;  // open transaction's, else committed
    std::optional<std::string> committed_last_checkpoint_;
    sqlite3_stmt* save_metadata_ = nullptr;  // chain_head, last_checkpoint
    sqlite3_stmt* delete_pre_chain_ = nullptr;
    sqlite3_stmt* delete_through_ = nullptr;
    sqlite3_stmt* insert_segment_ = nullptr;
    sqlite3_stmt* delete_segments_through_ = nullptr;  // segments of a cut sealed prefix
    sqlite3_stmt* delete_segments_before_ = nullptr;   // segments wholly before the oldest row
    sqlite3_stmt* anchor_before_ = nullptr;
    sqlite3_stmt* anchor_next_ = nullptr;
    std::filesystem::path path_;
    SequenceState state_;    // committed
    SequenceState pending_;  // accounted in the open transaction
};

// Rename shard-NNNN.db (and its -wal/-shm) to shard-NNNN.quarantined-<unix-time>.db so it is
// never written again but stays readable (DESIGN.md §8). Returns the new file name.
Result<std::string> quarantine_shard(const std::filesystem::path& dir, uint32_t index);

// Every event file of the store in `dir` (`.db`: active, historical and quarantined shards; not
// eventd-meta.db), sorted by name.
Result<std::vector<std::filesystem::path>> event_files(const std::filesystem::path& dir);

// Union of sequence_state over every `.db` file in `dir` (active, historical, quarantined),
// opened read-only; files that cannot be read are skipped and listed in *unreadable.
// Never scans `events` (startup must stay fast).
SequenceState load_sequence_state(const std::filesystem::path& dir, std::vector<std::string>* unreadable = nullptr);

}  // namespace eventd::store
