// ShardDb: opening or creating a shard (PSD-008 §3.2) and closing it.
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <system_error>

#include "schema.hpp"
#include "shard_db.hpp"
#include "msgpack_extract.hpp"
#include "event_columns.hpp"
#include "sqlite_util.hpp"

namespace eventd::store {

namespace fs = std::filesystem;
using detail::prepare;
using detail::sqlite_error;

namespace {

// A -wal without its database is a leftover (the file was removed by hand, or a quarantine
// was interrupted). SQLite silently deletes the WAL of an empty database file, so move it
// aside first — under a name query discovery ignores — rather than lose what it holds. The
// -shm is derived data.
Status set_aside_orphans(const fs::path& path) {
    fs::path wal = path;
    wal += "-wal";
    fs::path shm = path;
    shm += "-shm";
    std::error_code ec;
    if (fs::exists(wal, ec)) {
        fs::path aside = path;
        aside += ".orphaned-" + std::to_string(std::time(nullptr)) + "-wal";
        fs::rename(wal, aside, ec);
        if (ec) return base::errno_error(ec.value(), "set aside orphaned " + wal.string());
    }
    fs::remove(shm, ec);
    return {};
}

}  // namespace

std::string shard_file_name(uint32_t index) {
    char name[32];
    std::snprintf(name, sizeof name, "shard-%04u.db", index);
    return name;
}

Result<std::unique_ptr<ShardDb>> ShardDb::open(const fs::path& dir, uint32_t index) {
    std::unique_ptr<ShardDb> shard(new ShardDb());
    shard->index_ = index;
    shard->path_ = dir / shard_file_name(index);
    const fs::path& path = shard->path_;

    std::error_code ec;
    const bool exists = fs::exists(path, ec);
    if (ec) return base::errno_error(ec.value(), "stat " + path.string());
    if (!exists) {
        if (auto s = set_aside_orphans(path); !s) return s.error();
    }

    const int flags = SQLITE_OPEN_READWRITE | (exists ? 0 : SQLITE_OPEN_CREATE) | SQLITE_OPEN_EXRESCODE;
    const int rc = sqlite3_open_v2(path.c_str(), &shard->db_, flags, nullptr);
    if (rc != SQLITE_OK) return sqlite_error(shard->db_, rc, path, "open");
    sqlite3* db = shard->db_;
    sqlite3_busy_timeout(db, detail::kShardBusyTimeoutMs);
    // Payload expression indexes (§3.3.6) are evaluated by every INSERT and DELETE: the
    // writer's connection must know the function before it touches a shard that has one.
    if (auto s = register_msgpack_extract(db); !s)
        return Error{s.error().code, path.string() + ": " + s.error().message};

    bool fresh = !exists;
    if (exists) {
        // Nothing is written before the checks pass: an unknown or broken file stays untouched.
        auto empty = detail::has_no_tables(db, path);
        if (!empty) return empty.error();
        fresh = *empty;
    }
    if (fresh) {
        if (auto s = detail::create_schema(db, path); !s) return s.error();
    } else {
        if (auto s = detail::verify_schema(db, path); !s) return s.error();
        if (auto s = detail::set_durability(db, path); !s) return s.error();
        if (auto s = detail::ensure_file_id(db, path); !s) return s.error();
    }

    auto state = detail::read_sequence_state(db, path);
    if (!state) return state.error();
    shard->state_ = std::move(*state);

    auto max_id = detail::max_id_issued(db, path);
    if (!max_id) return max_id.error();
    shard->next_id_ = shard->committed_next_id_ = *max_id + 1;
    // Before the statements: an older file gets the chain_segments table they name.
    if (auto s = shard->open_chain(); !s) return s.error();
    if (auto s = shard->prepare_statements(); !s) return s.error();

    // Replaces SQLite's automatic checkpoint (which would run inside COMMIT): the writer
    // checkpoints PASSIVE itself between batches (§2.4.4).
    sqlite3_wal_hook(
        db,
        [](void* self, sqlite3*, const char*, int pages) {
            static_cast<ShardDb*>(self)->wal_pages_ = pages;
            return SQLITE_OK;
        },
        shard.get());
    return shard;
}

// Issue 28: a file created before chains gets chain_segments and an origin after its last row
// (those rows predate the chain: the verifier says so); then the head is loaded. One
// transaction, so a crash leaves either both or neither.
Status ShardDb::open_chain() {
    auto id = detail::read_file_id(db_, path_);
    if (!id) return id.error();
    if (!*id) return Error{EPROTO, path_.string() + ": metadata has no file_id"};
    file_id_ = **id;
    auto has_segments = detail::has_table(db_, "chain_segments", path_);
    if (!has_segments) return has_segments.error();
    auto origin = detail::read_metadata(db_, "chain_origin", path_);
    if (!origin) return origin.error();
    if (!*has_segments || !*origin) {
        if (auto s = detail::exec(db_, "BEGIN IMMEDIATE", path_); !s) return s;
        Status s = detail::ensure_chain_segments(db_, path_);
        if (s && !*origin) {
            const std::string start = chain_point_text({next_id_ - 1, chain_origin(file_id_, next_id_ - 1)});
            s = detail::write_metadata(db_, "chain_origin", start, path_);
            if (s) s = detail::write_metadata(db_, "chain_head", start, path_);
        }
        if (s) s = detail::exec(db_, "COMMIT", path_);
        if (!s) {
            if (in_transaction()) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
            return s;
        }
    }
    // Both places are required once the transaction above ran; a malformed one makes the file
    // one eventd will not write (quarantined, DESIGN.md §8), like any broken structure.
    auto chain_point = [this](const char* key) -> Result<ChainPoint> {
        auto text = detail::read_metadata(db_, key, path_);
        if (!text) return text.error();
        if (const auto point = *text ? parse_chain_point(**text) : std::nullopt) return *point;
        return Error{EPROTO,
                     path_.string() + ": not a valid eventd shard: metadata " + key +
                         " is missing or malformed (it will not be written; inspect it read-only or remove it)"};
    };
    const auto start = chain_point("chain_origin");
    if (!start) return start.error();
    origin_id_ = start->id;
    origin_by_retention_ = start->head != chain_origin(file_id_, start->id);
    const auto head = chain_point("chain_head");
    if (!head) return head.error();
    // A head behind the last row: rows were written without chaining them (an older eventd
    // after a downgrade). The chain goes on from its head; the verifier reports those rows.
    if (head->id != next_id_ - 1) {
        std::fprintf(stderr, "eventd: %s: the hash chain ends at row %lld, the last row is %lld\n", path_.c_str(),
                     static_cast<long long>(head->id), static_cast<long long>(next_id_ - 1));
    }
    head_ = committed_head_ = head->head;
    auto checkpoint = detail::read_metadata(db_, "last_checkpoint", path_);
    if (!checkpoint) return checkpoint.error();
    last_checkpoint_ = committed_last_checkpoint_ = *checkpoint;
    return {};
}

Status ShardDb::prepare_statements() {
    struct Wanted {
        sqlite3_stmt** slot;
        const char* sql;
    };
    const Wanted wanted[] = {
        // §2.4.5: one prepared INSERT, reused for every row.
        {&insert_, insert_event_sql().c_str()},
        {&delete_ranges_,
         "DELETE FROM sequence_state WHERE boot_id = ?1 AND cpu_id = ?2 AND first_sequence BETWEEN ?3 AND ?4"},
        {&insert_range_,
         "INSERT INTO sequence_state (boot_id, cpu_id, first_sequence, last_sequence) VALUES (?1, ?2, ?3, ?4)"},
        // §3.4: bounded batches, oldest first, through idx_events_timestamp.
        {&delete_before_,
         "DELETE FROM events WHERE id IN (SELECT id FROM events WHERE timestamp < ?1 ORDER BY timestamp LIMIT ?2)"},
        {&delete_oldest_, "DELETE FROM events WHERE id IN (SELECT id FROM events ORDER BY timestamp LIMIT ?1)"},
        // Sealed retention (delete_oldest): rows before the chain's origin — by timestamp
        // before a chain's start, all of them up to an anchor retention chose.
        {&delete_pre_chain_,
         "DELETE FROM events WHERE id IN (SELECT id FROM events WHERE id <= ?1 AND (?2 = 0 OR timestamp < ?2) "
         "ORDER BY timestamp LIMIT ?3)"},
        {&delete_through_,
         "DELETE FROM events WHERE id IN (SELECT id FROM events WHERE id <= ?1 ORDER BY id LIMIT ?2)"},
        // The chain's segments (row_chain.hpp): one per closed segment; those of a prefix
        // retention cut, or (unsealed retention, which deletes by timestamp) those wholly
        // before the oldest row left — or every one, when no row is left.
        {&insert_segment_, "INSERT INTO chain_segments (last_id, first_id, head, tags) VALUES (?1, ?2, ?3, ?4)"},
        {&delete_segments_through_, "DELETE FROM chain_segments WHERE last_id <= ?1"},
        {&delete_segments_before_,
         "DELETE FROM chain_segments WHERE last_id < coalesce((SELECT min(id) FROM events), ?1)"},
        // The checkpoint ending the next sealed prefix, and the head it sealed (seal/checkpoint.hpp).
        // This file's own: a collector also stores its hosts' checkpoints, as records. eventd's own
        // records only (no origin, no sequence; base/reserved_types.hpp): never a forged row.
        {&anchor_before_,
         "SELECT id, msgpack_extract(payload, '$.head') FROM events WHERE event_type = 'synthetic.checkpoint' AND "
         "origin_class IS NULL AND sequence IS NULL "
         "AND timestamp < ?1 AND id > ?2 AND msgpack_extract(payload, '$.file_id') = ?3 "
         "AND msgpack_extract(payload, '$.last_row') = id - 1 ORDER BY id DESC LIMIT 1"},
        {&anchor_next_,
         "SELECT id, msgpack_extract(payload, '$.head') FROM events WHERE event_type = 'synthetic.checkpoint' AND "
         "origin_class IS NULL AND sequence IS NULL "
         "AND id > ?1 AND msgpack_extract(payload, '$.file_id') = ?2 "
         "AND msgpack_extract(payload, '$.last_row') = id - 1 ORDER BY id LIMIT 1"},
        {&oldest_, "SELECT min(timestamp) FROM events"},
        {&save_max_id_, "INSERT OR REPLACE INTO metadata (key, value) VALUES ('max_id_issued', ?1)"},
        {&save_metadata_, "INSERT OR REPLACE INTO metadata (key, value) VALUES (?1, ?2)"},
        // A collector's duplicate check of a record without a sequence (through
        // idx_events_timestamp: duplicates share the timestamp).
        {&find_same_,
         "SELECT 1 FROM events WHERE timestamp = ?1 AND (boot_id = ?2 OR ?6) AND event_type = ?3 AND payload IS ?4 "
         "AND cpu_id IS ?5 LIMIT 1"},
    };
    for (const Wanted& w : wanted) {
        auto stmt = prepare(db_, w.sql, path_);
        if (!stmt) return stmt.error();
        *w.slot = stmt->release();
    }
    return {};
}

ShardDb::~ShardDb() {
    for (sqlite3_stmt* stmt :
         {insert_, delete_ranges_, insert_range_, delete_before_, delete_oldest_, oldest_, save_max_id_, save_metadata_,
          find_same_, delete_pre_chain_, delete_through_, anchor_before_, anchor_next_, insert_segment_,
          delete_segments_through_, delete_segments_before_}) {
        sqlite3_finalize(stmt);
    }
    // An open transaction is rolled back by the close; the last connection also checkpoints.
    sqlite3_close_v2(db_);
}

}  // namespace eventd::store
