#include "sqlite_util.hpp"

#include <cerrno>
#include <cstring>

namespace eventd::store::detail {

base::Error sqlite_error(sqlite3* db, int rc, const std::filesystem::path& file, const std::string& what) {
    const std::string text = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    const int primary = rc & 0xff;
    const int sys_errno = db ? sqlite3_system_errno(db) : 0;
    if (primary == SQLITE_FULL || (primary == SQLITE_IOERR && sys_errno == ENOSPC)) {
        return {ENOSPC, file.string() + ": " + what + ": event store is full (SQLite: " + text +
                            "); free space or lower EventRetentionMaxBytes"};
    }
    if (out_of_descriptors(db, rc)) {
        return {EMFILE, file.string() + ": " + what + ": eventd is out of file descriptors (" +
                            std::strerror(sys_errno) + "); close connections or raise its RLIMIT_NOFILE"};
    }
    // A damaged file or one that is not a database broke its format (EPROTO): the only SQLite
    // errors that say something about the file rather than about the moment (DESIGN.md §8
    // quarantines on these, never on a full disk or an I/O error that may pass).
    if (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB)
        return {EPROTO, file.string() + ": " + what + ": " + text + " (SQLite code " + std::to_string(rc) + ")"};
    const int code = primary == SQLITE_NOMEM ? ENOMEM : EIO;
    return {code, file.string() + ": " + what + ": " + text + " (SQLite code " + std::to_string(rc) + ")"};
}

bool out_of_descriptors(sqlite3* db, int rc) {
    const int primary = rc & 0xff;
    if (!db || (primary != SQLITE_CANTOPEN && primary != SQLITE_IOERR)) return false;
    const int sys_errno = sqlite3_system_errno(db);
    return sys_errno == EMFILE || sys_errno == ENFILE;
}

base::Status exec(sqlite3* db, const char* sql, const std::filesystem::path& file) {
    const int rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) return sqlite_error(db, rc, file, sql);
    return {};
}

base::Result<StmtPtr> prepare(sqlite3* db, const char* sql, const std::filesystem::path& file) {
    sqlite3_stmt* raw = nullptr;
    // PERSISTENT: these statements live as long as the connection (PSD-008 §2.4.5).
    const int rc = sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &raw, nullptr);
    StmtPtr stmt(raw);
    if (rc != SQLITE_OK) return sqlite_error(db, rc, file, std::string("prepare ") + sql);
    return stmt;
}

std::string file_uri(const std::filesystem::path& path, const std::string& query) {
    static const char* hex = "0123456789ABCDEF";
    std::string uri = "file:";
    for (unsigned char c : std::filesystem::absolute(path).string()) {
        if (c == '%' || c == '?' || c == '#' || c < 0x21 || c >= 0x7f) {
            uri += '%';
            uri += hex[c >> 4];
            uri += hex[c & 0xf];
        } else {
            uri += static_cast<char>(c);
        }
    }
    return uri + "?" + query;
}

}  // namespace eventd::store::detail
