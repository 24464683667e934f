// The read side of one shard file (PSD-008 §8.6.4, §8.7): the only way eventd reads shards —
// queries, stream live feeds, status counts.
//
//   ShardSnapshot::open(file, options)   read-only connection (never blocks the writer),
//                                        msgpack_extract, eventd_visible and the partial
//                                        aggregates registered, deadline + cancel installed
//   snapshot.begin()                     BEGIN; max(id) read first, so it opens the snapshot
//                                        every later statement sees: that is the watermark
//   snapshot.run(plan)  → RowCursor      the plan's SQL (read_sql.hpp) prepared and bound
//   cursor.next() / cursor.row()         rows as typed values (row_view.hpp), layout per shape
//   snapshot.end()                       COMMIT (cursors are reset first); begin() again for a
//                                        later snapshot on the same connection (live feeds)
//
// Errors carry the errno of what happened: ETIMEDOUT (the deadline passed), ECANCELED (the
// cancel flag was set), EIO naming the file otherwise. The caller words timeouts and cancels
// for its users; store never sees their configuration.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "read_plan.hpp"
#include "read_sql.hpp"
#include "row_view.hpp"
#include "shard_catalog.hpp"
#include "sql_functions.hpp"
#include "store_position.hpp"

struct sqlite3_stmt;

namespace eventd::store {

struct ReadOptions {
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
    const std::atomic<bool>* cancel = nullptr;  // read relaxed: a hint, checked every ~1000 VM steps
    // eventd_visible's answer for plans with visible_only; called on the reading thread, for
    // every candidate row. Empty: such plans see no rows.
    RowFilter visible;
};

struct SnapshotState;  // the connection and what its progress handler reads

// One prepared plan on one snapshot's connection. Movable; must not outlive its snapshot.
class RowCursor {
public:
    RowCursor(RowCursor&&) noexcept;
    RowCursor& operator=(RowCursor&&) noexcept;
    ~RowCursor();

    // Step to the next row: true with row() valid, false when done.
    base::Result<bool> next();
    RowView row() const;
    // Live plans: the id range (after, up_to] the next run reads; restarts the statement.
    void set_id_range(int64_t after, int64_t up_to);
    // Finish early: releases the statement's read position (the snapshot stays open).
    void reset();

private:
    friend class ShardSnapshot;
    RowCursor(SnapshotState* owner, sqlite3_stmt* stmt) : owner_(owner), stmt_(stmt) {}
    SnapshotState* owner_;  // heap-held: stays put when the snapshot object moves
    sqlite3_stmt* stmt_;
};

class ShardSnapshot {
public:
    // Open `file` for reading. EIO naming the file when it cannot be opened as a shard.
    static base::Result<ShardSnapshot> open(const ShardFile& file, ReadOptions options);

    ShardSnapshot(ShardSnapshot&&) noexcept;
    ShardSnapshot& operator=(ShardSnapshot&&) noexcept;
    ~ShardSnapshot();

    const ShardFile& file() const;

    // Start a read transaction and read the watermark (largest id, 0 when empty).
    base::Status begin();
    int64_t watermark() const;
    void end();

    base::Result<RowCursor> run(const ReadPlan& plan);
    // SQLite's EXPLAIN QUERY PLAN of run(plan), one detail line per step ("SEARCH events
    // USING INDEX idx_events_payload_user (<expr>=?)"): shows which index a query uses.
    base::Result<std::vector<std::string>> explain(const ReadPlan& plan);

    // Rows in `events` (a whole-table count, for status).
    base::Result<uint64_t> count_events();

    // The file's identity (store_position.hpp): its metadata file_id, or legacy_file_id of its
    // name for a file that no writer has opened since file ids exist.
    base::Result<FileId> file_id();
    // The largest row id the file ever had (rows retention deleted included), as of the open
    // read transaction; at least watermark().
    base::Result<int64_t> max_id_issued();

private:
    explicit ShardSnapshot(std::unique_ptr<SnapshotState> state);
    base::Result<RowCursor> run_sql(const SqlText& text);
    std::unique_ptr<SnapshotState> state_;
};

// Whether a query may leave `file` out when it cannot be opened as a shard (rather than fail):
// it is quarantined (the writer already gave up on it), it no longer exists (retention or
// quarantine moved it after the directory was listed), or it does not even start with the
// SQLite header (garbage under a shard name). Anything else — an active or historical shard
// that looks like SQLite — must fail the query: silently leaving out a live shard's events
// would give wrong answers.
bool may_skip_unreadable(const ShardFile& file);

}  // namespace eventd::store
