#include "eventd/index/meta_db.hpp"

#include "base/durable_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>

#include <spdlog/spdlog.h>

namespace eventd::index {
namespace {

namespace fs = std::filesystem;
using store::detail::exec;
using store::detail::prepare;
using store::detail::sqlite_error;

// Exactly the §3.3.9 tables (rollup tables belong to metrics, out of scope).
constexpr const char* kCreateSql =
    "CREATE TABLE index_counters(field_path TEXT PRIMARY KEY, query_count INTEGER NOT NULL, "
    "window_start INTEGER NOT NULL);"
    "CREATE TABLE desired_indexes(field_path TEXT PRIMARY KEY, priority INTEGER NOT NULL, "
    "is_expression INTEGER NOT NULL);"
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);";

constexpr int kBusyTimeoutMs = 2000;  // an operator's sqlite3 UPDATE of admin_sd holds the lock briefly

std::string iso8601_utc(int64_t now_ns) {
    const std::time_t secs = static_cast<std::time_t>(now_ns / 1'000'000'000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                  tm.tm_hour, tm.tm_min, tm.tm_sec);
    return buf;
}

std::string column_text(sqlite3_stmt* stmt, int i) {
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, i));
    return text ? std::string(text, static_cast<size_t>(sqlite3_column_bytes(stmt, i))) : std::string();
}

// Rename `path` and its side files to `to` (side files first, as store/shard_files.cpp does:
// a crash in between leaves no -wal beside the name the new file takes).
base::Status move_aside(const fs::path& path, const fs::path& to) {
    std::error_code ec;
    for (const char* side : {"-wal", "-shm"}) {
        const fs::path from = path.string() + side;
        if (!fs::exists(from, ec)) continue;
        fs::rename(from, to.string() + side, ec);
        if (ec) return base::errno_error(ec.value(), "cannot rename " + from.string());
    }
    fs::rename(path, to, ec);
    if (ec) return base::errno_error(ec.value(), "cannot rename " + path.string() + " to " + to.string());
    // Durable before a new eventd-meta.db takes the name (issue 40: every fsync checked).
    return base::sync_directory(to.parent_path());
}

void remove_with_side_files(const fs::path& path) {
    std::error_code ec;
    for (const char* side : {"", "-wal", "-shm"}) fs::remove(path.string() + side, ec);
}

}  // namespace

std::string corrupt_name(int64_t now_ns) { return std::string(kMetaDbName) + ".corrupt-" + std::to_string(now_ns); }

base::Result<MetaDb> MetaDb::connect(const fs::path& path) {
    sqlite3* raw = nullptr;
    const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr);
    store::detail::DbPtr db(raw);
    if (rc != SQLITE_OK) return sqlite_error(raw, rc, path, "open");
    sqlite3_busy_timeout(raw, kBusyTimeoutMs);
    // §3.3.9: WAL, synchronous=NORMAL. journal_mode is the first statement that reads the
    // file: a file that is not a database fails here.
    if (auto s = exec(raw, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", path); !s) return s.error();
    return MetaDb(std::move(db), path);
}

base::Result<MetaDb::Opened> MetaDb::open_existing(const fs::path& path) {
    auto db = connect(path);
    if (!db) return db.error();
    {
        auto check = prepare(db->db_.get(), "PRAGMA quick_check", path);
        if (!check) return check.error();
        const int rc = sqlite3_step(check->get());
        if (rc != SQLITE_ROW) return sqlite_error(db->db_.get(), rc, path, "quick_check");
        const std::string verdict = column_text(check->get(), 0);
        if (verdict != "ok") return base::Error{EPROTO, path.string() + ": quick_check: " + verdict};
    }
    auto contents = db->load();
    if (!contents) return contents.error();
    return Opened{std::move(*db), std::move(*contents), std::nullopt};
}

base::Result<MetaDb::Opened> MetaDb::create(const fs::path& path, int64_t now_ns) {
    // Created empty with mode 0600 before SQLite sees it: SQLite gives a new database (and its
    // -wal/-shm, which copy the database's mode) 0644 less the umask.
    const int fd = ::open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0) return base::errno_error("cannot create " + path.string());
    ::close(fd);
    auto made = [&]() -> base::Result<Opened> {
        auto db = connect(path);
        if (!db) return db.error();
        sqlite3* raw = db->db_.get();
        if (auto s = exec(raw, "BEGIN IMMEDIATE", path); !s) return s.error();
        auto fail = [&](const base::Error& e) -> base::Error {
            sqlite3_exec(raw, "ROLLBACK", nullptr, nullptr, nullptr);
            return e;
        };
        if (auto s = exec(raw, kCreateSql, path); !s) return fail(s.error());
        auto insert = prepare(raw, "INSERT INTO meta(key, value) VALUES (?1, ?2)", path);
        if (!insert) return fail(insert.error());
        const std::string created_at = iso8601_utc(now_ns);
        const std::pair<std::string, std::string> rows[] = {{"schema_version", std::to_string(kMetaSchemaVersion)},
                                                            {"created_at", created_at},
                                                            {"admin_sd", kDefaultAdminSd}};
        for (const auto& [key, value] : rows) {
            sqlite3_stmt* stmt = insert->get();
            sqlite3_reset(stmt);
            sqlite3_bind_text(stmt, 1, key.c_str(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
            sqlite3_bind_text(stmt, 2, value.c_str(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
            if (const int rc = sqlite3_step(stmt); rc != SQLITE_DONE)
                return fail(sqlite_error(raw, rc, path, "insert meta"));
        }
        if (auto s = exec(raw, "COMMIT", path); !s) return fail(s.error());
        MetaContents contents;
        contents.admin_sd = kDefaultAdminSd;
        contents.created_at = created_at;
        return Opened{std::move(*db), std::move(contents), std::nullopt};
    }();
    if (!made) remove_with_side_files(path);  // half made: the next start tries again from nothing
    return made;
}

base::Result<MetaDb::Opened> MetaDb::open(const fs::path& store_dir, int64_t now_ns) {
    const fs::path path = store_dir / kMetaDbName;
    std::error_code ec;
    if (!fs::exists(path, ec)) return create(path, now_ns);
    auto opened = open_existing(path);
    if (opened) return opened;
    // A full disk or an I/O error says nothing about the file: keep it (and admin_sd in it),
    // the caller tries again later. Only a damaged or unknown file is replaced.
    if (opened.error().code != base::ErrorCode::protocol) return opened.error();
    // §3.3.9: unknown version or unreadable → logged, recreated (adaptive state lost, not critical).
    const fs::path aside = store_dir / corrupt_name(now_ns);
    spdlog::error(
        "{} is unusable ({}); set aside as {} and recreated: the desired index set and query counters "
        "start empty, events are not affected",
        path.string(), opened.error().message, aside.filename().string());
    if (auto s = move_aside(path, aside); !s) return s.error();
    auto fresh = create(path, now_ns);
    if (!fresh) return fresh.error();
    fresh->set_aside_as = aside.filename().string();
    return fresh;
}

base::Result<MetaContents> MetaDb::load() {
    sqlite3* raw = db_.get();
    MetaContents out;
    auto meta = prepare(raw, "SELECT key, value FROM meta", path_);
    if (!meta) return meta.error();
    std::optional<std::string> version;
    int rc;
    while ((rc = sqlite3_step(meta->get())) == SQLITE_ROW) {
        const std::string key = column_text(meta->get(), 0);
        if (key == "schema_version") version = column_text(meta->get(), 1);
        if (key == "created_at") out.created_at = column_text(meta->get(), 1);
        if (key == "admin_sd") out.admin_sd = column_text(meta->get(), 1);
    }
    if (rc != SQLITE_DONE) return sqlite_error(raw, rc, path_, "read meta");
    if (version != std::to_string(kMetaSchemaVersion))
        return base::Error{EPROTO, path_.string() + ": unknown schema_version " +
                                       (version ? "'" + *version + "'" : "(missing)") + " (this eventd knows " +
                                       std::to_string(kMetaSchemaVersion) + ")"};

    auto counters = prepare(raw, "SELECT field_path, query_count, window_start FROM index_counters", path_);
    if (!counters) return counters.error();
    while ((rc = sqlite3_step(counters->get())) == SQLITE_ROW) {
        const int64_t count = sqlite3_column_int64(counters->get(), 1);
        out.counters[column_text(counters->get(), 0)] =
            FieldWindow{count > 0 ? static_cast<uint64_t>(count) : 0, sqlite3_column_int64(counters->get(), 2)};
    }
    if (rc != SQLITE_DONE) return sqlite_error(raw, rc, path_, "read index_counters");

    auto desired =
        prepare(raw, "SELECT field_path, is_expression FROM desired_indexes ORDER BY priority, field_path", path_);
    if (!desired) return desired.error();
    while ((rc = sqlite3_step(desired->get())) == SQLITE_ROW)
        out.desired.push_back(DesiredIndex{column_text(desired->get(), 0), sqlite3_column_int(desired->get(), 1) != 0});
    if (rc != SQLITE_DONE) return sqlite_error(raw, rc, path_, "read desired_indexes");
    return out;
}

base::Status MetaDb::save(const std::map<std::string, FieldWindow>& counters,
                          const std::vector<DesiredIndex>& desired) {
    sqlite3* raw = db_.get();
    if (auto s = exec(raw, "BEGIN IMMEDIATE", path_); !s) return s;
    auto fail = [&](const base::Error& e) -> base::Status {
        sqlite3_exec(raw, "ROLLBACK", nullptr, nullptr, nullptr);
        return e;
    };
    if (auto s = exec(raw, "DELETE FROM index_counters; DELETE FROM desired_indexes;", path_); !s)
        return fail(s.error());
    auto counter =
        prepare(raw, "INSERT INTO index_counters(field_path, query_count, window_start) VALUES (?1, ?2, ?3)", path_);
    if (!counter) return fail(counter.error());
    for (const auto& [field, w] : counters) {
        sqlite3_stmt* stmt = counter->get();
        sqlite3_reset(stmt);
        sqlite3_bind_text(stmt, 1, field.c_str(), static_cast<int>(field.size()), SQLITE_TRANSIENT);
        sqlite3_bind_int64(stmt, 2, store::detail::to_sql(w.count));
        sqlite3_bind_int64(stmt, 3, w.window_start_ns);
        if (const int rc = sqlite3_step(stmt); rc != SQLITE_DONE)
            return fail(sqlite_error(raw, rc, path_, "write index_counters"));
    }
    auto member =
        prepare(raw, "INSERT INTO desired_indexes(field_path, priority, is_expression) VALUES (?1, ?2, ?3)", path_);
    if (!member) return fail(member.error());
    for (size_t i = 0; i < desired.size(); ++i) {
        sqlite3_stmt* stmt = member->get();
        sqlite3_reset(stmt);
        sqlite3_bind_text(stmt, 1, desired[i].field_path.c_str(), static_cast<int>(desired[i].field_path.size()),
                          SQLITE_TRANSIENT);
        sqlite3_bind_int64(stmt, 2, static_cast<int64_t>(i));
        sqlite3_bind_int(stmt, 3, desired[i].is_expression ? 1 : 0);
        if (const int rc = sqlite3_step(stmt); rc != SQLITE_DONE)
            return fail(sqlite_error(raw, rc, path_, "write desired_indexes"));
    }
    if (auto s = exec(raw, "COMMIT", path_); !s) return fail(s.error());
    return {};
}

base::Result<int64_t> MetaDb::pragma(const char* name) {
    auto stmt = prepare(db_.get(), (std::string("PRAGMA ") + name).c_str(), path_);
    if (!stmt) return stmt.error();
    const int rc = sqlite3_step(stmt->get());
    if (rc != SQLITE_ROW) return sqlite_error(db_.get(), rc, path_, std::string("PRAGMA ") + name);
    return static_cast<int64_t>(sqlite3_column_int64(stmt->get(), 0));
}

base::Result<std::optional<std::string>> MetaDb::read_admin_sd() {
    auto stmt = prepare(db_.get(), "SELECT value FROM meta WHERE key = 'admin_sd'", path_);
    if (!stmt) return stmt.error();
    const int rc = sqlite3_step(stmt->get());
    if (rc == SQLITE_ROW) return std::optional<std::string>(column_text(stmt->get(), 0));
    if (rc == SQLITE_DONE) return std::optional<std::string>();
    return sqlite_error(db_.get(), rc, path_, "read admin_sd");
}

}  // namespace eventd::index
