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

    if (auto s = shard->prepare_statements(); !s) return s.error();
    auto max_id = detail::max_id_issued(db, path);
    if (!max_id) return max_id.error();
    shard->next_id_ = shard->committed_next_id_ = *max_id + 1;

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
        {&oldest_, "SELECT min(timestamp) FROM events"},
        {&save_max_id_, "INSERT OR REPLACE INTO metadata (key, value) VALUES ('max_id_issued', ?1)"},
        // A collector's duplicate check of a record without a sequence (through
        // idx_events_timestamp: duplicates share the timestamp).
        {&find_same_,
         "SELECT 1 FROM events WHERE timestamp = ?1 AND boot_id = ?2 AND event_type = ?3 AND payload IS ?4 "
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
         {insert_, delete_ranges_, insert_range_, delete_before_, delete_oldest_, oldest_, save_max_id_, find_same_}) {
        sqlite3_finalize(stmt);
    }
    // An open transaction is rolled back by the close; the last connection also checkpoints.
    sqlite3_close_v2(db_);
}

}  // namespace eventd::store
