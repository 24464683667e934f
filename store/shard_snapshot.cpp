// The read side of one shard (PSD-008 §8.6.4, §8.7); see shard_snapshot.hpp.
#include "shard_snapshot.hpp"

#include <sqlite3.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <system_error>

#include "read_sql.hpp"
#include "schema.hpp"
#include "sqlite_util.hpp"

namespace eventd::store {

namespace fs = std::filesystem;

struct SnapshotState {
    ShardFile file;
    ReadConnection conn;
    ReadOptions options;     // the visibility filter lives here: eventd_visible points at it
    detail::StmtPtr max_id;  // prepared at the first begin(), reused by every later one (live feeds)
    int64_t watermark = 0;
    bool in_transaction = false;

    // What a failed SQLite call means to the reader (see the header).
    base::Error error(int rc) const {
        if ((rc & 0xff) == SQLITE_INTERRUPT) {
            if (conn.cancelled()) return base::Error{ECANCELED, "reading " + file.name + " was cancelled"};
            return base::Error{ETIMEDOUT, "reading " + file.name + " passed its deadline"};
        }
        if (auto e = too_complex(conn.get(), rc)) return *e;
        if (detail::out_of_descriptors(conn.get(), rc))
            return base::Error{EMFILE, "cannot read event store file " + file.name + ": out of file descriptors"};
        // sqlite3_errstr, not errmsg: the generic text never carries SQL or table names.
        return base::Error{EIO, "cannot read event store file " + file.name + ": " + sqlite3_errstr(rc)};
    }

    // SQLite refused the statement for its size, not for the file: a query error (EINVAL) that
    // names the limit, never "cannot query event store file …". The planner's limits
    // (eventd/query/planner.hpp) keep queries below these; this is the backstop for what they
    // do not foresee. SQLite's messages for these cases are fixed texts (no SQL in them), so
    // they are matched here and the limit in force is read with sqlite3_limit.
    static std::optional<base::Error> too_complex(sqlite3* db, int rc) {
        if ((rc & 0xff) == SQLITE_TOOBIG)
            return base::Error{EINVAL,
                               "query is too complex for the event store: a value or statement is larger "
                               "than SQLite's limit of " +
                                   std::to_string(sqlite3_limit(db, SQLITE_LIMIT_LENGTH, -1)) + " bytes"};
        if ((rc & 0xff) != SQLITE_ERROR) return std::nullopt;
        const std::string message = sqlite3_errmsg(db);
        struct Known {
            const char* starts;
            const char* what;
            int limit;
        };
        static const Known known[] = {
            {"Expression tree is too large", "its conditions nest deeper than SQLite's expression depth limit of ",
             SQLITE_LIMIT_EXPR_DEPTH},
            {"parser stack overflow", "it nests deeper than SQLite's parser allows", -1},
            {"too many terms in", "it has more SORT or GROUP terms than SQLite's limit of ", SQLITE_LIMIT_COLUMN},
            {"too many columns", "it has more columns than SQLite's limit of ", SQLITE_LIMIT_COLUMN},
            {"too many SQL variables", "it has more values than SQLite's limit of ", SQLITE_LIMIT_VARIABLE_NUMBER},
            {"LIKE or GLOB pattern too complex", "a text match is longer than SQLite's limit of ",
             SQLITE_LIMIT_LIKE_PATTERN_LENGTH},
        };
        for (const Known& k : known) {
            if (message.rfind(k.starts, 0) != 0) continue;
            std::string text = std::string("query is too complex for the event store: ") + k.what;
            if (k.limit >= 0) text += std::to_string(sqlite3_limit(db, k.limit, -1));
            return base::Error{EINVAL, text + "; simplify it (use IN (…) for many values of one field)"};
        }
        return std::nullopt;
    }
};

namespace {

bool has_sqlite_header(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    char header[16] = {};
    in.read(header, sizeof header);
    return in.gcount() == 16 && std::memcmp(header, "SQLite format 3", 16) == 0;
}

}  // namespace

bool may_skip_unreadable(const ShardFile& file) {
    std::error_code ec;
    if (!file.active_index) return true;
    if (!fs::exists(file.path, ec)) return true;
    return !has_sqlite_header(file.path);
}

// --- RowCursor ------------------------------------------------------------------------------

RowCursor::RowCursor(RowCursor&& other) noexcept : owner_(other.owner_), stmt_(other.stmt_) { other.stmt_ = nullptr; }

RowCursor& RowCursor::operator=(RowCursor&& other) noexcept {
    if (this != &other) {
        sqlite3_finalize(stmt_);
        owner_ = other.owner_;
        stmt_ = other.stmt_;
        other.stmt_ = nullptr;
    }
    return *this;
}

// A connection closed first (sqlite3_close_v2) waits for this finalize: either order is safe.
RowCursor::~RowCursor() { sqlite3_finalize(stmt_); }

base::Result<bool> RowCursor::next() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    return owner_->error(rc);
}

RowView RowCursor::row() const { return RowView(stmt_); }

void RowCursor::set_id_range(int64_t after, int64_t up_to) {
    sqlite3_reset(stmt_);
    // read_sql(): a live plan's id bounds are parameters 1 and 2.
    sqlite3_bind_int64(stmt_, 1, after);
    sqlite3_bind_int64(stmt_, 2, up_to);
}

void RowCursor::reset() { sqlite3_reset(stmt_); }

// --- ShardSnapshot --------------------------------------------------------------------------

base::Result<ShardSnapshot> ShardSnapshot::open(const ShardFile& file, ReadOptions options) {
    auto conn = ReadConnection::open(file.path);
    if (!conn) return conn.error();  // its code too: out of descriptors is not a broken file
    auto state = std::make_unique<SnapshotState>(SnapshotState{file, std::move(*conn), std::move(options)});
    sqlite3* db = state->conn.get();
    state->conn.set_deadline(state->options.deadline, state->options.cancel);
    if (auto st = register_visibility(db, &state->options.visible); !st) return st.error();
    if (auto st = register_aggregate_functions(db); !st) return st.error();
    return ShardSnapshot(std::move(state));
}

ShardSnapshot::ShardSnapshot(std::unique_ptr<SnapshotState> state) : state_(std::move(state)) {}
ShardSnapshot::ShardSnapshot(ShardSnapshot&&) noexcept = default;
ShardSnapshot& ShardSnapshot::operator=(ShardSnapshot&&) noexcept = default;
ShardSnapshot::~ShardSnapshot() {
    if (state_) end();
}

const ShardFile& ShardSnapshot::file() const { return state_->file; }

base::Status ShardSnapshot::begin() {
    SnapshotState& s = *state_;
    if (s.in_transaction) end();
    sqlite3* db = s.conn.get();
    int rc = sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) return s.error(rc);
    s.in_transaction = true;
    // The first read opens the snapshot (a deferred BEGIN takes none): reading the watermark
    // first makes it exactly the snapshot every later statement of this transaction sees.
    if (!s.max_id) {
        sqlite3_stmt* raw = nullptr;
        rc = sqlite3_prepare_v2(db, "SELECT max(id) FROM events", -1, &raw, nullptr);
        s.max_id.reset(raw);
        if (rc != SQLITE_OK) return s.error(rc);
    }
    sqlite3_stmt* max_id = s.max_id.get();
    rc = sqlite3_step(max_id);
    if (rc != SQLITE_ROW) {
        sqlite3_reset(max_id);
        return s.error(rc);
    }
    s.watermark = sqlite3_column_int64(max_id, 0);  // NULL (empty) → 0
    sqlite3_reset(max_id);                          // no statement left positioned: end() only has cursors to reset
    return {};
}

int64_t ShardSnapshot::watermark() const { return state_->watermark; }

void ShardSnapshot::end() {
    SnapshotState& s = *state_;
    if (!s.in_transaction) return;
    sqlite3* db = s.conn.get();
    // A statement still positioned on a row would keep the read transaction open.
    for (sqlite3_stmt* st = sqlite3_next_stmt(db, nullptr); st; st = sqlite3_next_stmt(db, st)) sqlite3_reset(st);
    sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
    s.in_transaction = false;
}

base::Result<RowCursor> ShardSnapshot::run(const ReadPlan& plan) { return run_sql(read_sql(plan)); }

base::Result<std::vector<std::string>> ShardSnapshot::explain(const ReadPlan& plan) {
    SqlText text = read_sql(plan);
    text.sql = "EXPLAIN QUERY PLAN " + text.sql;
    auto cursor = run_sql(text);
    if (!cursor) return cursor.error();
    std::vector<std::string> steps;
    for (;;) {
        auto has = cursor->next();
        if (!has) return has.error();
        if (!*has) return steps;
        steps.emplace_back(cursor->row().text(3));  // columns: id, parent, notused, detail
    }
}

base::Result<RowCursor> ShardSnapshot::run_sql(const SqlText& text) {
    SnapshotState& s = *state_;
    sqlite3_stmt* raw = nullptr;
    const int rc = sqlite3_prepare_v2(s.conn.get(), text.sql.c_str(), static_cast<int>(text.sql.size()), &raw, nullptr);
    if (rc != SQLITE_OK) {
        sqlite3_finalize(raw);
        if (auto e = SnapshotState::too_complex(s.conn.get(), rc)) return *e;
        // errstr, not errmsg: errors reach clients, and SQLite's message may quote the SQL.
        return base::Error{EIO, "cannot query event store file " + s.file.name + ": " + sqlite3_errstr(rc)};
    }
    bind_params(raw, text.params);
    return RowCursor(&s, raw);
}

base::Result<uint64_t> ShardSnapshot::count_events() {
    ReadPlan plan;
    plan.shape = ReadPlan::Shape::count;
    auto cursor = run(plan);
    if (!cursor) return cursor.error();
    auto has = cursor->next();
    if (!has) return has.error();
    return static_cast<uint64_t>(*has ? cursor->row().integer(0) : 0);
}

base::Result<FileId> ShardSnapshot::file_id() {
    auto stored = detail::read_file_id(state_->conn.get(), state_->file.path);
    if (!stored) return stored.error();
    if (*stored) return **stored;
    return legacy_file_id(state_->file.path.filename().string());
}

base::Result<int64_t> ShardSnapshot::max_id_issued() {
    return detail::max_id_issued(state_->conn.get(), state_->file.path);
}

}  // namespace eventd::store
