#include "support/store_reader.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <memory>

namespace eventd::it {
namespace {

namespace fs = std::filesystem;

struct DbCloser {
    void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
struct StmtFinalizer {
    void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using Db = std::unique_ptr<sqlite3, DbCloser>;
using Stmt = std::unique_ptr<sqlite3_stmt, StmtFinalizer>;

// Read-only, like a query's connection. Returns nullptr and *error on failure.
Db open_read_only(const std::string& path, std::string* error) {
    sqlite3* raw = nullptr;
    const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
    Db db(raw);
    if (rc != SQLITE_OK) {
        *error = raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
        return nullptr;
    }
    sqlite3_busy_timeout(raw, 10000);  // eventd may be checkpointing
    return db;
}

Stmt prepare(sqlite3* db, const std::string& sql, std::string* error) {
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &raw, nullptr) != SQLITE_OK) {
        *error = sqlite3_errmsg(db);
        sqlite3_finalize(raw);
        return nullptr;
    }
    return Stmt(raw);
}

Guid guid_column(sqlite3_stmt* s, int column) {
    Guid g{};
    if (sqlite3_column_type(s, column) == SQLITE_BLOB && sqlite3_column_bytes(s, column) == 16)
        std::memcpy(g.data(), sqlite3_column_blob(s, column), 16);
    return g;
}

nlohmann::json decode(sqlite3_stmt* s, int column) {
    const auto* bytes = static_cast<const uint8_t*>(sqlite3_column_blob(s, column));
    const int size = sqlite3_column_bytes(s, column);
    // Not strict: a payload that is not msgpack shows up as a discarded value in assertions.
    return nlohmann::json::from_msgpack(bytes, bytes + size, true, false);
}

// Read one file's rows into `out`. False and *error when the file cannot be read.
bool read_file(const std::string& path, const std::string& name, const StoreReadOptions& options,
               std::vector<StoredRow>& out, std::string* error) {
    Db db = open_read_only(path, error);
    if (!db) return false;
    std::string sql =
        "SELECT id, boot_id, timestamp, cpu_id, sequence, origin_class, event_type, "
        "effective_token_guid IS NULL AND true_token_guid IS NULL AND process_guid IS NULL, payload FROM events";
    if (!options.kmes_rows) sql += " WHERE event_type LIKE 'synthetic.%'";
    sql += " ORDER BY id";
    Stmt s = prepare(db.get(), sql, error);
    if (!s) return false;
    std::vector<StoredRow> rows;
    int rc;
    while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
        StoredRow r;
        r.file = name;
        r.id = sqlite3_column_int64(s.get(), 0);
        r.boot_id = guid_column(s.get(), 1);
        r.timestamp = static_cast<uint64_t>(sqlite3_column_int64(s.get(), 2));
        if (sqlite3_column_type(s.get(), 3) != SQLITE_NULL)
            r.cpu_id = static_cast<uint16_t>(sqlite3_column_int(s.get(), 3));
        if (sqlite3_column_type(s.get(), 4) != SQLITE_NULL)
            r.sequence = static_cast<uint64_t>(sqlite3_column_int64(s.get(), 4));
        if (sqlite3_column_type(s.get(), 5) != SQLITE_NULL) r.origin_class = sqlite3_column_int(s.get(), 5);
        r.event_type = reinterpret_cast<const char*>(sqlite3_column_text(s.get(), 6));
        r.identity_null = sqlite3_column_int(s.get(), 7) != 0;
        r.payload_null = sqlite3_column_type(s.get(), 8) == SQLITE_NULL;
        if (!r.payload_null && (r.synthetic() || options.decode_kmes_payloads)) r.payload = decode(s.get(), 8);
        rows.push_back(std::move(r));
    }
    if (rc != SQLITE_DONE) {
        *error = sqlite3_errmsg(db.get());
        return false;
    }
    out.insert(out.end(), std::make_move_iterator(rows.begin()), std::make_move_iterator(rows.end()));
    return true;
}

}  // namespace

std::vector<StoredRow> StoreContents::of_type(const std::string& type) const {
    std::vector<StoredRow> out;
    for (const StoredRow& r : rows)
        if (r.event_type == type) out.push_back(r);
    return out;
}

std::vector<StoredRow> StoreContents::in_file(const std::string& file) const {
    std::vector<StoredRow> out;
    for (const StoredRow& r : rows)
        if (r.file == file) out.push_back(r);
    return out;
}

std::vector<std::string> shard_files(const std::string& dir) {
    std::vector<std::string> names;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.rfind("shard-", 0) == 0 && it->path().extension() == ".db") names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    return names;
}

StoreContents read_store(const std::string& dir, StoreReadOptions options) {
    StoreContents store;
    for (const std::string& name : shard_files(dir)) {
        std::string error;
        if (read_file(dir + "/" + name, name, options, store.rows, &error))
            store.files.push_back(name);
        else
            store.unreadable.push_back(name + ": " + error);
    }
    return store;
}

SequenceStateRows read_sequence_state(const std::string& dir) {
    SequenceStateRows state;
    for (const std::string& name : shard_files(dir)) {
        std::string error;
        Db db = open_read_only(dir + "/" + name, &error);
        if (!db) continue;
        Stmt s = prepare(db.get(), "SELECT boot_id, cpu_id, first_sequence, last_sequence FROM sequence_state", &error);
        if (!s) continue;
        while (sqlite3_step(s.get()) == SQLITE_ROW) {
            const auto key =
                std::make_pair(guid_column(s.get(), 0), static_cast<uint16_t>(sqlite3_column_int(s.get(), 1)));
            state[key].emplace_back(static_cast<uint64_t>(sqlite3_column_int64(s.get(), 2)),
                                    static_cast<uint64_t>(sqlite3_column_int64(s.get(), 3)));
        }
    }
    return state;
}

std::optional<std::string> query_text(const std::string& file, const std::string& sql) {
    std::string error;
    Db db = open_read_only(file, &error);
    if (!db) return std::nullopt;
    Stmt s = prepare(db.get(), sql, &error);
    if (!s || sqlite3_step(s.get()) != SQLITE_ROW || sqlite3_column_type(s.get(), 0) == SQLITE_NULL)
        return std::nullopt;
    return std::string(reinterpret_cast<const char*>(sqlite3_column_text(s.get(), 0)));
}

}  // namespace eventd::it
