// Retention (PSD-008 §3.4): which rows to delete, by age and by total size, over a set of
// shards. store/ owns the algorithm (DESIGN.md §1: the store owns retention); the caller owns
// the shards and their coordination with writers, and hands retention a way to run one batch
// with exclusive access to shard i (eventd: under the shard writer's lock, between its
// transactions — §3.4 "a per-shard mutex taken by retention for each batch and released
// between batches").
//
//   step 1 (age):  for each shard in turn, delete rows with timestamp < cutoff_ns, in
//                  batches of `batch` rows, until a batch comes back short.
//   step 2 (size): while Σ used_bytes > max_bytes: find the shard whose oldest row is the
//                  oldest of all, delete from it a batch of rows older than every other
//                  shard's oldest row (at least its oldest row) — so no row is deleted while
//                  an older one survives elsewhere. Stops when nothing is left or a delete
//                  removes nothing.
//
// Every batch is one call of ShardAccess (one short transaction); between batches retention
// pauses for `pause` so the writer gets its lock back, and checks `should_stop`.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

#include "shard_db.hpp"

namespace eventd::store {

// The shards retention works over: `count` of them, numbered 0..count-1 (positions, not
// necessarily shard indices). `with_shard(i, f)` runs f on shard i with exclusive access to
// its read-write connection and returns when f has.
struct RetentionShards {
    uint32_t count = 0;
    std::function<void(uint32_t i, const std::function<void(ShardDb&)>& f)> with_shard;
};

struct RetentionLimits {
    uint64_t cutoff_ns = 0;  // step 1: rows with timestamp < cutoff_ns go; 0 = no age limit
    uint64_t max_bytes = 0;  // step 2: Σ used_bytes over the shards; 0 = no size limit
};

struct RetentionOptions {
    uint32_t batch = 1000;                                     // rows per delete transaction
    std::chrono::milliseconds pause{1};                        // between batches: let the writer in
    std::function<bool()> should_stop = [] { return false; };  // checked before each batch
};

struct RetentionOutcome {
    uint64_t deleted = 0;  // rows deleted, both steps
    bool stopped = false;  // should_stop() ended the run early
};

// One retention pass (both steps). A shard whose delete fails is left alone for the rest of
// the step (its error is the writer's to report); the others go on.
RetentionOutcome run_retention(const RetentionShards& shards, const RetentionLimits& limits,
                               const RetentionOptions& options = {});

// now − days, in ns (EventRetentionDays → RetentionLimits::cutoff_ns); 0 when days would
// reach before the epoch.
uint64_t retention_cutoff(uint64_t now_ns, uint64_t days);

}  // namespace eventd::store
