// Running one EVENTS query over the whole store (PSD-008 §8.6.2–§8.6.4).
//
//   execute(q):  plan (planner.hpp) ─► list every shard-*.db ─► one store::ShardSnapshot each
//                (eventd_visible bound to the caller, deadline + cancel flag)
//                ─► per shard: begin() (watermark = max(id), the stream's start on active
//                   shards), run(plan.read) — all in one read snapshot
//                ─► plain: N-way merge on the sort key, SKIP/TAKE at the coordinator, each record
//                   encoded (row_encoder.hpp: field filter, SELECT) and handed to the sink as produced
//                ─► aggregate: partials merged (merge.hpp), sorted, SKIP/TAKE, sink
//
// The result is never materialised whole: a plain query holds one row per shard at a time.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <span>

#include "eventd/access/policy.hpp"
#include "eventd/query_language/ast.hpp"
#include "eventd/query/record.hpp"
#include "base/result.hpp"
#include "store/shard_snapshot.hpp"
#include "store/store_position.hpp"

namespace eventd::query {

// Receives each result record in order, msgpack-encoded for the wire (§8.8; the bytes are
// valid during the call). An error stops execution and is returned by execute() unchanged
// (typically: the client is gone).
using RecordSink = std::function<base::Status(std::span<const uint8_t> record)>;

struct ExecutionContext {
    std::filesystem::path store_dir;
    access::CallerAccess* access = nullptr;          // never null
    std::chrono::steady_clock::time_point deadline;  // now + QueryTimeoutMs
    uint32_t timeout_ms = 30000;                     // for the error text
    const std::atomic<bool>* cancelled = nullptr;    // shutdown
    uint64_t group_budget_bytes = 0;                 // MaxQueryGroupBytes (merge.hpp); 0: unbounded
};

// Where a stream's live phase starts (§8.7): for every shard file read, by file id, the largest
// id it ever issued as of the snapshot the initial result was read from (files that never had a
// row are left out). Filled for streams only; its store id is the caller's to set.
struct StreamStart {
    store::StorePosition position;
};

// A store error in the query's words: its deadline and shutdown, not the shard's; running out
// of file descriptors is eventd's momentary state, not the file's (and the query may be asked
// again once connections close).
base::Error query_error(const base::Error& e, const ExecutionContext& ctx);

// eventd_visible's answer for the caller of `ctx`: its type access, or empty (no filter asked)
// for an unrestricted caller.
store::RowFilter caller_visibility(const ExecutionContext& ctx);

// One shard file opened for a query and its read transaction begun (watermark read): deadline,
// cancel flag, `visible` as eventd_visible. nullopt: a file the query may leave out
// (store::may_skip_unreadable). Errors in the query's words (query_error).
base::Result<std::optional<store::ShardSnapshot>> open_snapshot(const store::ShardFile& file,
                                                               const store::RowFilter& visible,
                                                               ExecutionContext& ctx);

// Run `q` (mode events) for the caller in `ctx`, feeding each record to `sink`. Errors:
// a type error in the query (ErrorCode::invalid, message per the decided semantics), the
// deadline (errors.hpp timeout_error: ErrorCode::timed_out), shutdown (errors.hpp
// shutdown_error: ErrorCode::cancelled — not a failure), a shard that cannot be read
// (ErrorCode::io, or ErrorCode::protocol for a damaged one; naming the file), or the sink's own
// error.
base::Result<StreamStart> execute(const Query& q, ExecutionContext& ctx, const RecordSink& sink);

}  // namespace eventd::query
