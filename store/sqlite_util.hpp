// Store-internal SQLite helpers: RAII owners for connections and statements, and the one
// place that turns an SQLite result code into the project's Error (base::Result).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "base/result.hpp"

namespace eventd::store::detail {

struct DbCloser {
    void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
struct StmtFinalizer {
    void operator()(sqlite3_stmt* stmt) const { sqlite3_finalize(stmt); }
};
using DbPtr = std::unique_ptr<sqlite3, DbCloser>;
using StmtPtr = std::unique_ptr<sqlite3_stmt, StmtFinalizer>;

// Error for a failed SQLite call on `file` while doing `what`. A full disk (SQLITE_FULL, or
// an I/O error whose errno is ENOSPC) becomes ENOSPC with "event store is full" in the
// message (PSD-008 §11.1); a file SQLite could not open because the process is out of file
// descriptors (errno EMFILE/ENFILE) becomes EMFILE saying so — a resource state, never a sign
// that the file is broken (no caller may quarantine or skip a shard for it); everything else
// EIO with SQLite's own text.
base::Error sqlite_error(sqlite3* db, int rc, const std::filesystem::path& file, const std::string& what);

// Run SQL without results (pragmas with no interesting answer, BEGIN/COMMIT, DDL).
// Whether the last failure on `db` was the process running out of file descriptors.
bool out_of_descriptors(sqlite3* db, int rc);

base::Status exec(sqlite3* db, const char* sql, const std::filesystem::path& file);

base::Result<StmtPtr> prepare(sqlite3* db, const char* sql, const std::filesystem::path& file);

// A `file:` URI for `path` with `query` appended ("mode=ro"), percent-encoding the characters
// a URI path cannot carry literally.
std::string file_uri(const std::filesystem::path& path, const std::string& query);

// SQLite stores INTEGER as signed 64 bits; sequences and nanosecond timestamps are u64 that
// stay below 2^63 in practice (timestamps until the year 2262). Stored bit-for-bit.
// How long a shard connection waits for a lock another connection holds: a concurrent read-only
// query may hold one for a moment, so a write waits rather than fails.
inline constexpr int kShardBusyTimeoutMs = 5000;

inline int64_t to_sql(uint64_t v) { return static_cast<int64_t>(v); }
inline uint64_t from_sql(int64_t v) { return static_cast<uint64_t>(v); }

}  // namespace eventd::store::detail
