// The writer's index statements (PSD-008 §3.3.3–§3.3.4): what secondary indexes the shard
// has, and one CREATE or DROP at a time, outside the batch transactions, cancellable.
#include <sqlite3.h>

#include <string>

#include "secondary_index.hpp"
#include "shard_db.hpp"
#include "sqlite_util.hpp"

namespace eventd::store {

using detail::prepare;
using detail::sqlite_error;

namespace {

// The value of a PRAGMA that returns one integer (0 if it returns nothing).
int pragma_int(sqlite3* db, const char* pragma) {
    sqlite3_stmt* stmt = nullptr;
    int value = 0;
    if (sqlite3_prepare_v2(db, pragma, -1, &stmt, nullptr) == SQLITE_OK && sqlite3_step(stmt) == SQLITE_ROW)
        value = sqlite3_column_int(stmt, 0);
    sqlite3_finalize(stmt);
    return value;
}

}  // namespace

Result<std::vector<std::string>> ShardDb::secondary_indexes() {
    // Every index of the managed naming (§3.3.7) on events except the fixed one.
    auto stmt = prepare(db_,
                        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'events' "
                        "AND name LIKE 'idx\\_events\\_%' ESCAPE '\\' AND name != 'idx_events_timestamp' ORDER BY name",
                        path_);
    if (!stmt) return stmt.error();
    std::vector<std::string> names;
    int rc;
    while ((rc = sqlite3_step(stmt->get())) == SQLITE_ROW) {
        names.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(stmt->get(), 0)));
    }
    if (rc != SQLITE_DONE) return sqlite_error(db_, rc, path_, "list the indexes");
    return names;
}

Status ShardDb::run_index_statement(const std::string& sql, const std::function<bool()>& cancelled) {
    if (in_transaction()) return Error{EINVAL, path_.string() + ": an index statement inside a transaction"};
    // §3.3.3 (informative): sqlite3_interrupt() is honoured only at opcode boundaries; a
    // progress handler every 1000 virtual-machine steps answers a cancel within well under
    // a millisecond, also in the middle of a B-tree build. A non-zero return interrupts the
    // statement, and SQLite rolls the partial index back.
    constexpr int kProgressSteps = 1000;
    sqlite3_progress_handler(
        db_, kProgressSteps, [](void* flag) { return (*static_cast<const std::function<bool()>*>(flag))() ? 1 : 0; },
        const_cast<std::function<bool()>*>(&cancelled));
    // CREATE INDEX sorts every key; SQLite's sorter writes out a sorted run each time it holds
    // cache_size worth of keys, inside one VM step that never reaches the progress handler.
    // With the default 2 MB those steps took up to ~50 ms — the whole tail of a cancel. Runs
    // of 512 KiB cut it to ~10 ms, at no measurable cost to the build (PERFORMANCE.md §8).
    const int cache_size = pragma_int(db_, "PRAGMA cache_size");
    sqlite3_exec(db_, "PRAGMA cache_size=-512", nullptr, nullptr, nullptr);
    const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr);
    sqlite3_exec(db_, ("PRAGMA cache_size=" + std::to_string(cache_size)).c_str(), nullptr, nullptr, nullptr);
    sqlite3_progress_handler(db_, 0, nullptr, nullptr);
    if (rc == SQLITE_INTERRUPT) return Error{base::ErrorCode::cancelled, path_.string() + ": " + sql + ": cancelled"};
    if (rc != SQLITE_OK) return sqlite_error(db_, rc, path_, sql);
    return {};
}

}  // namespace eventd::store
