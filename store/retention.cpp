// Retention's selection of what to delete (PSD-008 §3.4); see retention.hpp for the steps.
#include "retention.hpp"

#include <algorithm>
#include <optional>
#include <thread>

namespace eventd::store {
namespace {

// Run f on shard i with exclusive access and return its value.
template <class F>
auto on_shard(const RetentionShards& shards, uint32_t i, F&& f) {
    std::optional<decltype(f(std::declval<ShardDb&>()))> out;
    shards.with_shard(i, [&](ShardDb& db) { out.emplace(f(db)); });
    return std::move(*out);
}

void pause(const RetentionOptions& options) {
    if (options.pause.count() > 0) std::this_thread::sleep_for(options.pause);
}

// Step 1: per shard, bounded batches of rows older than the cutoff.
bool delete_by_age(const RetentionShards& shards, uint64_t cutoff_ns, const RetentionOptions& options,
                   RetentionOutcome& out) {
    for (uint32_t i = 0; i < shards.count; ++i) {
        for (;;) {
            if (options.should_stop()) return false;
            auto n = on_shard(shards, i, [&](ShardDb& db) { return db.delete_oldest(cutoff_ns, options.batch); });
            if (!n || *n == 0) break;
            out.deleted += *n;
            if (*n < options.batch) break;
            pause(options);
        }
    }
    return true;
}

uint64_t total_used_bytes(const RetentionShards& shards) {
    uint64_t sum = 0;
    for (uint32_t i = 0; i < shards.count; ++i) sum += on_shard(shards, i, [](ShardDb& db) { return db.used_bytes(); });
    return sum;
}

// The shard holding the globally oldest row, and the bound below which its rows are older
// than every other shard's oldest row.
struct Oldest {
    uint32_t shard;
    uint64_t bound;  // delete_oldest cutoff; 0 = no other shard has rows: any of its rows
};

std::optional<Oldest> find_oldest(const RetentionShards& shards) {
    std::optional<uint32_t> oldest;
    uint64_t oldest_ts = UINT64_MAX, runner_up_ts = UINT64_MAX;
    for (uint32_t i = 0; i < shards.count; ++i) {
        auto ts = on_shard(shards, i, [](ShardDb& db) { return db.oldest_timestamp(); });
        if (!ts || !*ts) continue;
        if (**ts < oldest_ts) {
            runner_up_ts = oldest_ts;
            oldest_ts = **ts;
            oldest = i;
        } else if (**ts < runner_up_ts) {
            runner_up_ts = **ts;
        }
    }
    if (!oldest) return std::nullopt;
    // Up to (not including) the runner-up's oldest row; at least the oldest row itself.
    const uint64_t bound = runner_up_ts == UINT64_MAX ? 0 : std::max(runner_up_ts, oldest_ts + 1);
    return Oldest{*oldest, bound};
}

// Step 2: the globally oldest rows until the live pages fit. Measured in used pages, not file
// sizes: freed pages are reused by later inserts, but files shrink only by VACUUM, which
// retention never runs (§3.4).
void delete_by_size(const RetentionShards& shards, uint64_t max_bytes, const RetentionOptions& options,
                    RetentionOutcome& out) {
    while (total_used_bytes(shards) > max_bytes) {
        if (options.should_stop()) {
            out.stopped = true;
            return;
        }
        const std::optional<Oldest> oldest = find_oldest(shards);
        if (!oldest) return;  // nothing left to delete
        auto n = on_shard(shards, oldest->shard,
                          [&](ShardDb& db) { return db.free_oldest(oldest->bound, options.batch); });
        if (!n || *n == 0) return;
        out.deleted += *n;
        pause(options);
    }
}

}  // namespace

RetentionOutcome run_retention(const RetentionShards& shards, const RetentionLimits& limits,
                               const RetentionOptions& options) {
    RetentionOutcome out;
    if (limits.cutoff_ns != 0 && !delete_by_age(shards, limits.cutoff_ns, options, out)) {
        out.stopped = true;
        return out;
    }
    if (limits.max_bytes != 0) delete_by_size(shards, limits.max_bytes, options, out);
    return out;
}

uint64_t retention_cutoff(uint64_t now_ns, uint64_t days) {
    constexpr uint64_t kDayNs = 86'400ull * 1'000'000'000ull;
    if (days >= now_ns / kDayNs) return 0;
    return now_ns - days * kDayNs;
}

}  // namespace eventd::store
