// The writer's index statements (PSD-008 §3.3.3–§3.3.4): what secondary indexes the shard
// has, and one CREATE or DROP at a time, outside the batch transactions, cancellable.
#include <sqlite3.h>

#include "secondary_index.hpp"
#include "shard_db.hpp"
#include "sqlite_util.hpp"

namespace eventd::store {

using detail::prepare;
using detail::sqlite_error;

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
    const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr);
    sqlite3_progress_handler(db_, 0, nullptr, nullptr);
    if (rc == SQLITE_INTERRUPT) return Error{kmes::ErrorCode::cancelled, path_.string() + ": " + sql + ": cancelled"};
    if (rc != SQLITE_OK) return sqlite_error(db_, rc, path_, sql);
    return {};
}

}  // namespace eventd::store
