// A resumed stream's catch-up (issue 12; docs/QUERY-SERVER.md "Cursors"): a request with
// `after: <cursor>` gets, instead of an initial result, every matching committed record after
// the cursor's position — per shard file in id order (commit order), file after file, across
// active, historical and quarantined files — and then the live phase from where the catch-up
// ended (live_feed.hpp). "Matching" is what the live phase matches: type pattern, WHERE and
// the caller's visibility, SELECT applied.
//
//   store id ─► same store as the cursor's?        no: refused (allow_gap: from the oldest)
//   every file: snapshot, file id, watermark, max_id_issued, rows still stored after the cursor
//   ─► lost = ids the file issued after the cursor that are no longer stored (retention),
//             plus files the cursor names that are gone (count unknown)
//   ─► lost and not allow_gap: refused, nothing sent; allow_gap: on_gap(), then the rows
//   ─► the rows after the cursor, file by file, each with where it is stored
//
// Row ids are contiguous per file (the writer numbers them; a rolled-back id is issued again),
// which is what makes "issued after the cursor but not stored" exactly the deleted ones.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "eventd/query/executor.hpp"
#include "eventd/query/live_feed.hpp"
#include "store/store_position.hpp"

namespace eventd::query {

// What a resumed stream could not deliver (sent to the client before the records).
struct Gap {
    std::optional<uint64_t> lost;  // records deleted after the cursor; nullopt: unknown
    std::string detail;            // for people: which files, why
};

// Refused with EINVAL when `q` has a clause a resumed stream cannot honour (SINCE, UNTIL,
// SORT, SKIP, TAKE, aggregates: they shape an initial result, and a resumed stream has none).
// One exception: a bare COUNT without STREAM, which count_after answers.
base::Status check_resumable(const Query& q);

// Whether `q` (checked by check_resumable) asks how many records follow the cursor.
bool is_count_after(const Query& q);

// `EVENTS … COUNT` with `after`: how many matching records are stored after `from` (nullopt:
// all of them) — a follower's backlog, e.g. eventd-forward's lag in records. Refused like
// catch_up for a cursor of another store (no allow_gap: a count against another store's
// position means nothing).
base::Result<uint64_t> count_after(const Query& q, ExecutionContext& ctx, const store::StoreId& store,
                                   const std::optional<store::StorePosition>& from);

// The catch-up of `q` (mode events, checked by check_resumable and access) after `from`
// (nullopt: from the oldest record) in the store whose id is `store`. Returns where the live
// phase starts, with the store id set. Errors: as execute(), plus EINVAL (ErrorCode::invalid)
// for a cursor of another store or a position retention deleted, when !allow_gap — before
// anything reached the sink or on_gap.
base::Result<StreamStart> catch_up(const Query& q, ExecutionContext& ctx, const store::StoreId& store,
                                   const std::optional<store::StorePosition>& from, bool allow_gap,
                                   const std::function<base::Status(const Gap&)>& on_gap, const PositionedSink& sink);

}  // namespace eventd::query
