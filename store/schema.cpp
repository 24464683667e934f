#include "schema.hpp"

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "base/hex.hpp"
#include "event_columns.hpp"
#include "sqlite_util.hpp"

namespace eventd::store::detail {

namespace {

// §3.1.4
constexpr const char* kCreateMetadata = "CREATE TABLE metadata (key TEXT PRIMARY KEY, value TEXT NOT NULL)";
// §3.1.3: the only index at creation.
constexpr const char* kCreateTimestampIndex = "CREATE INDEX idx_events_timestamp ON events(timestamp)";
constexpr const char* kInsertMetadata =
    "INSERT INTO metadata (key, value) VALUES ('schema_version', '1'), "
    "('created_at', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))";
// The file's identity (store_position.hpp): 16 random bytes as 32 lowercase hex digits. Files
// created before it existed get one when the writer first opens them (ensure_file_id: the id
// derived from the file's name that readers used for it until then).
constexpr const char* kInsertFileId =
    "INSERT OR IGNORE INTO metadata (key, value) VALUES ('file_id', lower(hex(randomblob(16))))";
// DESIGN.md §4.3: accounted sequence ranges, one row per coalesced range.
constexpr const char* kCreateSequenceState =
    "CREATE TABLE sequence_state ("
    "boot_id BLOB NOT NULL, "
    "cpu_id INTEGER NOT NULL, "
    "first_sequence INTEGER NOT NULL, "
    "last_sequence INTEGER NOT NULL, "
    "PRIMARY KEY (boot_id, cpu_id, first_sequence)) WITHOUT ROWID";

// Issue 28: the hash chain's segments (row_chain.hpp, docs/STORE.md §8). Files created before
// chains get it when a writer first opens them (ShardDb::open_chain).
constexpr const char* kCreateChainSegments =
    "CREATE TABLE IF NOT EXISTS chain_segments ("
    "last_id INTEGER PRIMARY KEY, "
    "first_id INTEGER NOT NULL, "
    "head BLOB NOT NULL, "
    "tags BLOB NOT NULL)";

struct Column {
    std::string name;
    std::string type;
    bool not_null;
    int pk;  // position in the primary key, 0 if not part of it
};

// The events table as event_columns.hpp draws it: id is the (only) primary-key column.
const std::vector<Column> kEventsColumns = [] {
    std::vector<Column> columns;
    for (const EventColumnSpec& c : kEventColumns) {
        columns.push_back(
            {std::string(c.name), std::string(c.sql_type), c.not_null, c.column == EventColumn::id ? 1 : 0});
    }
    return columns;
}();
const std::vector<Column> kMetadataColumns = {
    {"key", "TEXT", false, 1},
    {"value", "TEXT", true, 0},
};
const std::vector<Column> kSequenceStateColumns = {
    {"boot_id", "BLOB", true, 1},
    {"cpu_id", "INTEGER", true, 2},
    {"first_sequence", "INTEGER", true, 3},
    {"last_sequence", "INTEGER", true, 0},
};

base::Error broken(const std::filesystem::path& file, const std::string& what) {
    return {EPROTO, file.string() + ": not a valid eventd shard: " + what +
                     " (it will not be written; inspect it read-only or remove it)"};
}

std::string text_column(sqlite3_stmt* stmt, int i) {
    const unsigned char* text = sqlite3_column_text(stmt, i);
    return text ? reinterpret_cast<const char*>(text) : "";
}

bool same_type(const std::string& declared, const char* expected) {
    return strcasecmp(declared.c_str(), expected) == 0;
}

base::Status verify_columns(sqlite3* db, const char* table, const std::vector<Column>& expected,
                            const std::filesystem::path& file) {
    // table_info takes no bound parameters; `table` is one of our constant names.
    auto stmt = prepare(db, (std::string("PRAGMA table_info(") + table + ")").c_str(), file);
    if (!stmt) return stmt.error();
    size_t i = 0;
    int rc;
    while ((rc = sqlite3_step(stmt->get())) == SQLITE_ROW) {
        const std::string name = text_column(stmt->get(), 1);
        const std::string type = text_column(stmt->get(), 2);
        const bool not_null = sqlite3_column_int(stmt->get(), 3) != 0;
        const int pk = sqlite3_column_int(stmt->get(), 5);
        if (i >= expected.size()) return broken(file, std::string(table) + " has an unexpected column " + name);
        const Column& want = expected[i];
        if (name != want.name || !same_type(type, want.type.c_str()) || not_null != want.not_null || pk != want.pk) {
            return broken(file, std::string(table) + " column " + std::to_string(i) + " is '" + name + " " + type +
                                    (not_null ? " NOT NULL" : "") + "', expected '" + want.name + " " + want.type +
                                    (want.not_null ? " NOT NULL" : "") + "'");
        }
        ++i;
    }
    if (rc != SQLITE_DONE) return sqlite_error(db, rc, file, std::string("read the columns of ") + table);
    if (i == 0) return broken(file, std::string("table ") + table + " is missing");
    if (i != expected.size()) {
        return broken(file, std::string(table) + " lacks column " + expected[i].name);
    }
    return {};
}

base::Status verify_timestamp_index(sqlite3* db, const std::filesystem::path& file) {
    auto stmt =
        prepare(db, "SELECT tbl_name FROM sqlite_master WHERE type = 'index' AND name = 'idx_events_timestamp'", file);
    if (!stmt) return stmt.error();
    int rc = sqlite3_step(stmt->get());
    if (rc == SQLITE_DONE) return broken(file, "index idx_events_timestamp is missing");
    if (rc != SQLITE_ROW) return sqlite_error(db, rc, file, "look up idx_events_timestamp");
    if (text_column(stmt->get(), 0) != "events") return broken(file, "idx_events_timestamp is not on events");

    auto info = prepare(db, "PRAGMA index_info(idx_events_timestamp)", file);
    if (!info) return info.error();
    std::vector<std::string> columns;
    while ((rc = sqlite3_step(info->get())) == SQLITE_ROW) columns.push_back(text_column(info->get(), 2));
    if (rc != SQLITE_DONE) return sqlite_error(db, rc, file, "read idx_events_timestamp");
    if (columns != std::vector<std::string>{"timestamp"}) {
        return broken(file, "idx_events_timestamp does not index exactly events(timestamp)");
    }
    return {};
}

}  // namespace

base::Result<bool> has_no_tables(sqlite3* db, const std::filesystem::path& file) {
    auto stmt = prepare(db, "SELECT count(*) FROM sqlite_master", file);
    if (!stmt) return stmt.error();
    const int rc = sqlite3_step(stmt->get());
    if (rc != SQLITE_ROW) return sqlite_error(db, rc, file, "read the schema");
    return sqlite3_column_int64(stmt->get(), 0) == 0;
}

base::Result<bool> has_table(sqlite3* db, const char* name, const std::filesystem::path& file) {
    auto stmt = prepare(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1", file);
    if (!stmt) return stmt.error();
    sqlite3_bind_text(stmt->get(), 1, name, -1, SQLITE_STATIC);
    const int rc = sqlite3_step(stmt->get());
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    return sqlite_error(db, rc, file, std::string("look up table ") + name);
}

base::Status set_durability(sqlite3* db, const std::filesystem::path& file) {
    auto stmt = prepare(db, "PRAGMA journal_mode=WAL", file);
    if (!stmt) return stmt.error();
    const int rc = sqlite3_step(stmt->get());
    if (rc != SQLITE_ROW) return sqlite_error(db, rc, file, "PRAGMA journal_mode=WAL");
    const std::string mode = text_column(stmt->get(), 0);
    if (!same_type(mode, "wal")) {
        return base::Error{EIO, file.string() + ": SQLite refused WAL mode (journal_mode is '" + mode +
                                    "'); the event store needs a filesystem with shared-memory support"};
    }
    return exec(db, "PRAGMA synchronous=FULL", file);
}

base::Status create_schema(sqlite3* db, const std::filesystem::path& file) {
    if (auto s = set_durability(db, file); !s) return s;
    if (auto s = exec(db, "BEGIN IMMEDIATE", file); !s) return s;
    for (const char* sql :
         {create_events_sql().c_str(), kCreateMetadata, kCreateTimestampIndex, kInsertMetadata, kInsertFileId,
          kCreateSequenceState, kCreateChainSegments}) {
        if (auto s = exec(db, sql, file); !s) {
            // Best effort; the file then has no tables and is created afresh next time.
            sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
            return s;
        }
    }
    if (auto s = exec(db, "COMMIT", file); !s) {
        if (!sqlite3_get_autocommit(db)) sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
        return s;
    }
    return {};
}

base::Status verify_schema(sqlite3* db, const std::filesystem::path& file) {
    // Version first: a newer version may legitimately have another structure (§3.1.4).
    if (auto s = verify_columns(db, "metadata", kMetadataColumns, file); !s) return s;
    auto stmt = prepare(db, "SELECT value FROM metadata WHERE key = 'schema_version'", file);
    if (!stmt) return stmt.error();
    const int rc = sqlite3_step(stmt->get());
    if (rc == SQLITE_DONE) return broken(file, "metadata has no schema_version row");
    if (rc != SQLITE_ROW) return sqlite_error(db, rc, file, "read schema_version");
    const std::string version = text_column(stmt->get(), 0);
    if (version != std::to_string(1)) {
        return base::Error{EPROTO, file.string() + ": unknown schema_version '" + version +
                                       "' (this eventd writes version 1 only); it will not be written — "
                                       "migrate it administratively"};
    }
    if (auto s = verify_columns(db, "events", kEventsColumns, file); !s) return s;
    if (auto s = verify_columns(db, "sequence_state", kSequenceStateColumns, file); !s) return s;
    return verify_timestamp_index(db, file);
}

base::Result<SequenceState> read_sequence_state(sqlite3* db, const std::filesystem::path& file) {
    auto stmt = prepare(db, "SELECT boot_id, cpu_id, first_sequence, last_sequence FROM sequence_state", file);
    if (!stmt) return stmt.error();
    SequenceState state;
    int rc;
    while ((rc = sqlite3_step(stmt->get())) == SQLITE_ROW) {
        sqlite3_stmt* row = stmt->get();
        const bool boot_ok = sqlite3_column_type(row, 0) == SQLITE_BLOB && sqlite3_column_bytes(row, 0) == 16;
        const int64_t cpu = sqlite3_column_int64(row, 1);
        const uint64_t first = from_sql(sqlite3_column_int64(row, 2));
        const uint64_t last = from_sql(sqlite3_column_int64(row, 3));
        if (!boot_ok || cpu < 0 || cpu > 0xffff || first > last) {
            return broken(file, "malformed sequence_state row (cpu_id " + std::to_string(cpu) + ", range " +
                                    std::to_string(first) + ".." + std::to_string(last) + ")");
        }
        BootCpu key{};
        std::memcpy(key.boot_id.data(), sqlite3_column_blob(row, 0), 16);
        key.cpu_id = static_cast<uint16_t>(cpu);
        state[key].add(first, last);
    }
    if (rc != SQLITE_DONE) return sqlite_error(db, rc, file, "read sequence_state");
    return state;
}

base::Status ensure_file_id(sqlite3* db, const std::filesystem::path& file) {
    // The id readers already gave this file while it had none (store_position.hpp).
    const FileId legacy = legacy_file_id(file.filename().string());
    const std::string hex = base::hex_text(legacy);
    auto stmt = prepare(db, "INSERT OR IGNORE INTO metadata (key, value) VALUES ('file_id', ?1)", file);
    if (!stmt) return stmt.error();
    sqlite3_bind_text(stmt->get(), 1, hex.c_str(), static_cast<int>(hex.size()), SQLITE_TRANSIENT);
    const int rc = sqlite3_step(stmt->get());
    if (rc != SQLITE_DONE) return sqlite_error(db, rc, file, "give the file its file_id");
    return {};
}

base::Result<std::optional<FileId>> read_file_id(sqlite3* db, const std::filesystem::path& file) {
    auto stmt = prepare(db, "SELECT value FROM metadata WHERE key = 'file_id'", file);
    if (!stmt) return stmt.error();
    const int rc = sqlite3_step(stmt->get());
    if (rc == SQLITE_DONE) return std::optional<FileId>{};
    if (rc != SQLITE_ROW) return sqlite_error(db, rc, file, "read file_id");
    const std::string hex = text_column(stmt->get(), 0);
    FileId id{};
    auto nibble = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; };
    bool ok = hex.size() == 32;
    for (size_t i = 0; ok && i < 16; ++i) {
        const int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
        ok = hi >= 0 && lo >= 0;
        id[i] = uint8_t(hi << 4 | lo);
    }
    if (!ok) return broken(file, "metadata file_id '" + hex + "' is not 32 lowercase hex digits");
    return std::optional<FileId>{id};
}

base::Result<std::optional<std::string>> read_metadata(sqlite3* db, const char* key,
                                                      const std::filesystem::path& file) {
    auto stmt = prepare(db, "SELECT value FROM metadata WHERE key = ?1", file);
    if (!stmt) return stmt.error();
    sqlite3_bind_text(stmt->get(), 1, key, -1, SQLITE_STATIC);
    const int rc = sqlite3_step(stmt->get());
    if (rc == SQLITE_DONE) return std::optional<std::string>{};
    if (rc != SQLITE_ROW) return sqlite_error(db, rc, file, std::string("read metadata ") + key);
    return std::optional<std::string>{text_column(stmt->get(), 0)};
}

base::Status write_metadata(sqlite3* db, const char* key, const std::string& value,
                            const std::filesystem::path& file) {
    auto stmt = prepare(db, "INSERT OR REPLACE INTO metadata (key, value) VALUES (?1, ?2)", file);
    if (!stmt) return stmt.error();
    sqlite3_bind_text(stmt->get(), 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt->get(), 2, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
    const int rc = sqlite3_step(stmt->get());
    if (rc != SQLITE_DONE) return sqlite_error(db, rc, file, std::string("write metadata ") + key);
    return {};
}

base::Status ensure_chain_segments(sqlite3* db, const std::filesystem::path& file) {
    return exec(db, kCreateChainSegments, file);
}

base::Result<int64_t> max_id_issued(sqlite3* db, const std::filesystem::path& file) {
    auto stmt = prepare(db,
                        "SELECT max(coalesce((SELECT max(id) FROM events), 0), "
                        "coalesce((SELECT CAST(value AS INTEGER) FROM metadata WHERE key = 'max_id_issued'), 0))",
                        file);
    if (!stmt) return stmt.error();
    const int rc = sqlite3_step(stmt->get());
    if (rc != SQLITE_ROW) return sqlite_error(db, rc, file, "read the largest row id");
    return static_cast<int64_t>(sqlite3_column_int64(stmt->get(), 0));
}

}  // namespace eventd::store::detail
