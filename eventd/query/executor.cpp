// Fan-out, N-way merge and aggregate merge of one EVENTS query (PSD-008 §8.6.4); see
// executor.hpp for the flow.
//
// Unreadable files. A query must not fail forever because of one file eventd itself set
// aside, so a shard file that cannot be opened as a shard (ReadConnection::open fails: not
// SQLite, no event table, unreadable) is skipped with a warning when
//   - it is quarantined (shard-NNNN.quarantined-<t>.db: the writer already gave up on it), or
//   - it no longer exists (retention or quarantine moved it after the directory was listed), or
//   - it does not even start with the SQLite header (garbage under a shard name).
// Any other failure — opening an active or historical shard that looks like SQLite, an I/O
// error or a corrupt page met while reading — fails the query with an error naming the file:
// silently leaving out a live shard's events would give wrong answers.
#include "eventd/query/executor.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <system_error>

#include "eventd/query/errors.hpp"
#include "eventd/query/merge.hpp"
#include "eventd/query/planner.hpp"
#include "eventd/query/row_encoder.hpp"
#include "store/shard_catalog.hpp"
#include "store/sqlite_util.hpp"

namespace eventd::query {
namespace {

namespace fs = std::filesystem;
using kmes::Error;
using store::ReadConnection;
using store::ShardFile;
using store::detail::StmtPtr;

constexpr int kCheckEvery = 256;  // records between explicit deadline checks

Error timeout_error(const ExecutionContext& ctx) { return query::timeout_error(ctx.timeout_ms); }

// The progress handler only runs inside sqlite3_step; this covers the time spent between
// steps (merging, the sink) and deadlines that have passed before a short statement runs.
kmes::Status check_time(const ExecutionContext& ctx) {
    if (ctx.cancelled && ctx.cancelled->load(std::memory_order_relaxed)) return shutdown_error();
    if (std::chrono::steady_clock::now() > ctx.deadline) return timeout_error(ctx);
    return {};
}

Error read_error(const ShardFile& file, const ReadConnection& conn, int rc, const ExecutionContext& ctx) {
    if ((rc & 0xff) == SQLITE_INTERRUPT) {
        if (conn.cancelled()) return shutdown_error();
        if (conn.timed_out()) return timeout_error(ctx);
        if (ctx.cancelled && ctx.cancelled->load(std::memory_order_relaxed)) return shutdown_error();
        return timeout_error(ctx);
    }
    // sqlite3_errstr, not errmsg: the generic text never carries SQL or table names.
    return Error{EIO, "cannot read event store file " + file.name + ": " + sqlite3_errstr(rc)};
}

bool has_sqlite_header(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    char header[16] = {};
    in.read(header, sizeof header);
    return in.gcount() == 16 && std::memcmp(header, "SQLite format 3", 16) == 0;
}

// See the comment at the top of the file.
bool skippable(const ShardFile& file) {
    std::error_code ec;
    if (!file.active_index) return true;
    if (!fs::exists(file.path, ec)) return true;
    return !has_sqlite_header(file.path);
}

struct Shard {
    ShardFile file;
    ReadConnection conn;
    StmtPtr stmt;                // the planned query
    std::vector<SqlValue> keys;  // plain: user sort keys, boot_id, cpu_id, sequence, id
};

// Open one shard for the query: connection, functions, deadline, read transaction, stream
// watermark (active shards), the prepared and bound statement. nullopt: skipped file.
kmes::Result<std::optional<Shard>> open_shard(const ShardFile& file, const Plan& plan, bool restricted,
                                              access::CallerAccess* const* slot, ExecutionContext& ctx,
                                              StreamStart& start) {
    auto conn = ReadConnection::open(file.path);
    if (!conn) {
        if (skippable(file)) {
            // A quarantined file is a known state (logged when it was quarantined): no
            // warning per query for it.
            if (file.active_index) {
                spdlog::warn("query: skipping unreadable event store file {}: {}", file.name, conn.error().message);
            } else {
                spdlog::debug("query: skipping unreadable event store file {}: {}", file.name, conn.error().message);
            }
            return std::optional<Shard>{};
        }
        return Error{EIO, conn.error().message};
    }
    sqlite3* db = conn->get();
    conn->set_deadline(ctx.deadline, ctx.cancelled);
    if (restricted) {
        if (auto st = register_visibility(db, slot); !st) return st.error();
    }
    if (plan.aggregate) {
        if (auto st = register_aggregate_functions(db); !st) return st.error();
    }
    int rc = sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) return read_error(file, *conn, rc, ctx);

    // The watermark is read first: it opens the snapshot the query then reads (§8.7).
    if (file.active_index) {
        sqlite3_stmt* raw = nullptr;
        rc = sqlite3_prepare_v2(db, "SELECT max(id) FROM events", -1, &raw, nullptr);
        StmtPtr max_id(raw);
        if (rc == SQLITE_OK) rc = sqlite3_step(raw);
        if (rc != SQLITE_ROW) return read_error(file, *conn, rc, ctx);
        start.last_id[*file.active_index] = sqlite3_column_int64(raw, 0);  // NULL (empty) → 0
    }

    sqlite3_stmt* raw = nullptr;
    rc = sqlite3_prepare_v2(db, plan.sql.c_str(), static_cast<int>(plan.sql.size()), &raw, nullptr);
    StmtPtr stmt(raw);
    if (rc != SQLITE_OK) {
        spdlog::error("query: cannot prepare the plan on {}: {}", file.name, sqlite3_errmsg(db));
        return Error{EIO, "cannot query event store file " + file.name + ": " + sqlite3_errstr(rc)};
    }
    bind_params(raw, plan.params);
    return std::optional<Shard>{Shard{file, std::move(*conn), std::move(stmt), {}}};
}

// Plain rows: ORDER BY per shard, merged here on the same order.
class PlainMerge {
public:
    PlainMerge(const Query& q, const Plan& plan, ExecutionContext& ctx)
        : query_(q), plan_(plan), ctx_(ctx), encoder_(q.select, *ctx.access) {}

    // Step `shard` once: true with its keys loaded when it has a row, false when done.
    kmes::Result<bool> advance(Shard& shard) {
        const int rc = sqlite3_step(shard.stmt.get());
        if (rc == SQLITE_DONE) return false;
        if (rc != SQLITE_ROW) return read_error(shard.file, shard.conn, rc, ctx_);
        sqlite3_stmt* s = shard.stmt.get();
        shard.keys.clear();
        for (const SortColumn& c : plan_.sort) shard.keys.push_back(column_value(s, c.column));
        shard.keys.push_back(column_value(s, kBootIdColumn));
        shard.keys.push_back(column_value(s, kCpuIdColumn));
        shard.keys.push_back(column_value(s, kSequenceColumn));
        shard.keys.push_back(SqlValue::integer(sqlite3_column_int64(s, kIdColumn)));
        return true;
    }

    // <0 when a comes first: the user sort keys as SQLite ordered them, then the documented
    // tie-break boot_id, cpu_id, sequence, shard file name, id (all ascending).
    int compare(const Shard& a, const Shard& b) const {
        const size_t n = plan_.sort.size();
        for (size_t i = 0; i < n; ++i) {
            int c = compare_values(a.keys[i], b.keys[i], plan_.sort[i].nocase);
            if (plan_.sort[i].descending) c = -c;
            if (c != 0) return c;
        }
        for (size_t i = n; i < n + 3; ++i) {
            const int c = compare_values(a.keys[i], b.keys[i], false);
            if (c != 0) return c;
        }
        const int c = a.file.name.compare(b.file.name);
        if (c != 0) return c;
        return compare_values(a.keys[n + 3], b.keys[n + 3], false);
    }

    kmes::Status run(std::vector<Shard>& shards, const RecordSink& sink) {
        std::vector<Shard*> heap;
        for (Shard& s : shards) {
            auto has = advance(s);
            if (!has) return has.error();
            if (*has) heap.push_back(&s);
        }
        // std heap keeps the greatest on top: "greater" puts the first record there.
        auto after = [this](const Shard* a, const Shard* b) { return compare(*a, *b) > 0; };
        std::make_heap(heap.begin(), heap.end(), after);
        const uint64_t skip = query_.skip.value_or(0);
        const uint64_t take = query_.take.value_or(UINT64_MAX);
        uint64_t seen = 0, sent = 0;
        while (!heap.empty() && sent < take) {
            std::pop_heap(heap.begin(), heap.end(), after);
            Shard* top = heap.back();
            heap.pop_back();
            if (++seen % kCheckEvery == 0) {
                if (auto st = check_time(ctx_); !st) return st;
            }
            if (seen > skip) {
                if (auto st = emit(*top, sink); !st) return st;
                ++sent;
                if (sent >= take) break;
            }
            auto has = advance(*top);
            if (!has) return has.error();
            if (*has) {
                heap.push_back(top);
                std::push_heap(heap.begin(), heap.end(), after);
            } else {
                top->stmt.reset();  // done: end this shard's statement early
            }
        }
        return {};
    }

private:
    kmes::Status emit(Shard& shard, const RecordSink& sink) { return sink(encoder_.encode(shard.stmt.get())); }

    const Query& query_;
    const Plan& plan_;
    ExecutionContext& ctx_;
    RowEncoder encoder_;
};

}  // namespace

kmes::Result<StreamStart> execute(const Query& q, ExecutionContext& ctx, const RecordSink& sink) {
    assert(ctx.access != nullptr);
    if (q.mode != Mode::events) return Error{EINVAL, "only EVENTS queries run over the event store"};
    if (auto st = check_time(ctx); !st) return st.error();
    const bool restricted = !ctx.access->unrestricted();
    auto plan = plan_query(q, restricted);
    if (!plan) return plan.error();
    auto files = store::list_shard_files(ctx.store_dir);
    if (!files) return files.error();

    access::CallerAccess* slot = ctx.access;  // eventd_visible reads it through this pointer
    StreamStart start;

    if (plan->aggregate) {
        // One shard at a time: its partials go into the merger and its connection closes
        // before the next opens (memory ∝ groups, one connection at a time).
        AggregateMerger merger(q, *plan);
        for (const ShardFile& file : *files) {
            if (auto st = check_time(ctx); !st) return st.error();
            auto shard = open_shard(file, *plan, restricted, &slot, ctx, start);
            if (!shard) return shard.error();
            if (!*shard) continue;
            Shard& s = **shard;
            int rc;
            while ((rc = sqlite3_step(s.stmt.get())) == SQLITE_ROW) merger.add_row(s.stmt.get());
            if (rc != SQLITE_DONE) return read_error(s.file, s.conn, rc, ctx);
        }
        uint64_t n = 0;
        std::vector<uint8_t> encoded;
        for (const Record& r : merger.finish()) {
            if (++n % kCheckEvery == 0) {
                if (auto st = check_time(ctx); !st) return st.error();
            }
            encoded.clear();
            to_msgpack_float64(r, encoded);
            if (auto st = sink(encoded); !st) return st.error();
        }
        return start;
    }

    // Plain: every shard open at once (one row each in flight), then the N-way merge. The
    // read transactions stay open until the merge ends, so each shard is one snapshot.
    std::vector<Shard> shards;
    shards.reserve(files->size());
    for (const ShardFile& file : *files) {
        if (auto st = check_time(ctx); !st) return st.error();
        auto shard = open_shard(file, *plan, restricted, &slot, ctx, start);
        if (!shard) return shard.error();
        if (*shard) shards.push_back(std::move(**shard));
    }
    if (plan->shard_limit && *plan->shard_limit == 0) return start;  // TAKE 0
    PlainMerge merge(q, *plan, ctx);
    if (auto st = merge.run(shards, sink); !st) return st.error();
    return start;
}

}  // namespace eventd::query
