// Fan-out, N-way merge and aggregate merge of one EVENTS query (PSD-008 §8.6.4); see
// executor.hpp for the flow. Every shard is read through store::ShardSnapshot; a file that
// cannot be opened is left out only when store::may_skip_unreadable says a query may.
#include "eventd/query/executor.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <optional>

#include "eventd/query_language/errors.hpp"
#include "eventd/query/merge.hpp"
#include "eventd/query/planner.hpp"
#include "eventd/query/row_encoder.hpp"
#include "store/shard_catalog.hpp"
#include "store/shard_snapshot.hpp"

namespace eventd::query {
namespace {

using base::Error;
using store::EventColumn;
using store::ShardFile;
using store::ShardSnapshot;

constexpr int kCheckEvery = 256;  // records between explicit deadline checks

// The progress handler only runs inside SQLite; this covers the time spent between steps
// (merging, the sink) and deadlines that have passed before a short statement runs.
base::Status check_time(const ExecutionContext& ctx) {
    if (ctx.cancelled && ctx.cancelled->load(std::memory_order_relaxed)) return shutdown_error();
    if (std::chrono::steady_clock::now() > ctx.deadline) return timeout_error(ctx.timeout_ms);
    return {};
}

struct Shard {
    ShardSnapshot snapshot;
    std::optional<store::RowCursor> cursor;  // the planned query
    std::vector<SqlValue> keys;              // plain: user sort keys, boot_id, cpu_id, sequence, id
};

// Open one shard for the query: snapshot (open_snapshot), a stream's watermark, the planned
// query. nullopt: a file the query may leave out.
base::Result<std::optional<Shard>> open_shard(const ShardFile& file, const Plan& plan, const store::RowFilter& visible,
                                              ExecutionContext& ctx, StreamStart* start) {
    auto snapshot = open_snapshot(file, visible, ctx);
    if (!snapshot) return snapshot.error();
    if (!*snapshot) return std::optional<Shard>{};
    if (start) {
        // Past ids retention already deleted too (max_id_issued): a cursor taken from this
        // stream must not count them as lost.
        auto issued = (*snapshot)->max_id_issued();
        if (!issued) return query_error(issued.error(), ctx);
        if (const int64_t past = std::max((*snapshot)->watermark(), *issued); past > 0) {
            auto id = (*snapshot)->file_id();
            if (!id) return query_error(id.error(), ctx);
            start->position.last_id[*id] = past;
        }
    }
    auto cursor = (*snapshot)->run(plan.read);
    if (!cursor) {
        // A query SQLite refuses for its size (EINVAL) is the query's problem, not eventd's: the
        // caller gets the error; the log only at debug level (any user can send such queries).
        if (cursor.error().code == base::ErrorCode::invalid) {
            spdlog::debug("query refused by SQLite: {}", cursor.error().message);
        } else {
            spdlog::error("query: {}", cursor.error().message);
        }
        return query_error(cursor.error(), ctx);
    }
    return std::optional<Shard>{Shard{std::move(**snapshot), std::move(*cursor), {}}};
}

// Plain rows: ORDER BY per shard, merged here on the same order.
class PlainMerge {
public:
    PlainMerge(const Query& q, const Plan& plan, ExecutionContext& ctx)
        : query_(q), plan_(plan), ctx_(ctx), encoder_(q.select, *ctx.access) {}

    // Step `shard` once: true with its keys loaded when it has a row, false when done.
    base::Result<bool> advance(Shard& shard) {
        auto has = shard.cursor->next();
        if (!has) return query_error(has.error(), ctx_);
        if (!*has) return false;
        const store::RowView row = shard.cursor->row();
        shard.keys.clear();
        for (const SortColumn& c : plan_.sort) shard.keys.push_back(store::value_at(row, c.column));
        for (EventColumn c : {EventColumn::boot_id, EventColumn::cpu_id, EventColumn::sequence, EventColumn::id}) {
            shard.keys.push_back(store::value_at(row, store::index_of(c)));
        }
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
        const int c = a.snapshot.file().name.compare(b.snapshot.file().name);
        if (c != 0) return c;
        return compare_values(a.keys[n + 3], b.keys[n + 3], false);
    }

    base::Status run(std::vector<Shard>& shards, const RecordSink& sink) {
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
                top->cursor.reset();  // done: end this shard's statement early
            }
        }
        return {};
    }

private:
    base::Status emit(Shard& shard, const RecordSink& sink) { return sink(encoder_.encode(shard.cursor->row())); }

    const Query& query_;
    const Plan& plan_;
    ExecutionContext& ctx_;
    RowEncoder encoder_;
};

}  // namespace

store::RowFilter caller_visibility(const ExecutionContext& ctx) {
    if (!ctx.access->filters_rows()) return {};
    return [access = ctx.access](const store::RowSubject& row) {
        return access->visible(row.event_type, row.effective_token, row.true_token);
    };
}

Error query_error(const Error& e, const ExecutionContext& ctx) {
    if (e.is_cancelled()) return shutdown_error();
    if (e.is_timed_out()) return timeout_error(ctx.timeout_ms);
    if (e.code == base::ErrorCode::too_many_files) return out_of_descriptors_error();
    return e;
}

base::Result<std::optional<ShardSnapshot>> open_snapshot(const ShardFile& file, const store::RowFilter& visible,
                                                         ExecutionContext& ctx) {
    auto snapshot = ShardSnapshot::open(file, store::ReadOptions{ctx.deadline, ctx.cancelled, visible});
    if (!snapshot) {
        // Out of descriptors says nothing about the file (and may_skip_unreadable could not
        // even read its header then): the query fails rather than silently leave a shard out.
        if (snapshot.error().code == base::ErrorCode::too_many_files) {
            spdlog::warn("query: cannot open event store file {}: {}", file.name, snapshot.error().message);
            return out_of_descriptors_error();
        }
        if (store::may_skip_unreadable(file)) {
            // A quarantined file is a known state (logged when it was quarantined): no
            // warning per query for it.
            if (file.active_index) {
                spdlog::warn("query: skipping unreadable event store file {}: {}", file.name, snapshot.error().message);
            } else {
                spdlog::debug("query: skipping unreadable event store file {}: {}", file.name,
                              snapshot.error().message);
            }
            return std::optional<ShardSnapshot>{};
        }
        return snapshot.error();
    }
    // The watermark opens the snapshot the query then reads (§8.7).
    if (auto st = snapshot->begin(); !st) return query_error(st.error(), ctx);
    return std::optional<ShardSnapshot>{std::move(*snapshot)};
}

base::Result<StreamStart> execute(const Query& q, ExecutionContext& ctx, const RecordSink& sink) {
    assert(ctx.access != nullptr);
    if (q.mode != Mode::events) return Error{EINVAL, "only EVENTS queries run over the event store"};
    if (auto st = check_time(ctx); !st) return st.error();
    const bool restricted = ctx.access->filters_rows();
    auto plan = plan_query(q, restricted);
    if (!plan) return plan.error();
    if (restricted && q.type_pattern) bound_by_type_verdict(q, ctx.access->visibility(*q.type_pattern), plan->read);
    auto files = store::list_shard_files(ctx.store_dir);
    if (!files) return query_error(files.error(), ctx);

    const store::RowFilter visible = caller_visibility(ctx);
    StreamStart start;
    StreamStart* const stream_start = q.stream ? &start : nullptr;

    if (plan->aggregate) {
        // One shard at a time: its partials go into the merger and its connection closes
        // before the next opens (memory ∝ groups, one connection at a time).
        AggregateMerger merger(q, *plan, ctx.group_budget_bytes);
        for (const ShardFile& file : *files) {
            if (auto st = check_time(ctx); !st) return st.error();
            auto shard = open_shard(file, *plan, visible, ctx, stream_start);
            if (!shard) return shard.error();
            if (!*shard) continue;
            store::RowCursor& cursor = *(*shard)->cursor;
            for (;;) {
                auto has = cursor.next();
                if (!has) return query_error(has.error(), ctx);
                if (!*has) break;
                if (auto st = merger.add_row(cursor.row()); !st) return st.error();
            }
        }
        uint64_t n = 0;
        std::vector<uint8_t> encoded;
        auto emitted = merger.finish([&](const Record& r) -> base::Status {
            if (++n % kCheckEvery == 0) {
                if (auto st = check_time(ctx); !st) return st;
            }
            encoded.clear();
            to_msgpack_float64(r, encoded);
            return sink(encoded);
        });
        if (!emitted) return emitted.error();
        return start;
    }

    // Plain: every shard open at once (one row each in flight), then the N-way merge. The
    // read transactions stay open until the merge ends, so each shard is one snapshot.
    std::vector<Shard> shards;
    shards.reserve(files->size());
    for (const ShardFile& file : *files) {
        if (auto st = check_time(ctx); !st) return st.error();
        auto shard = open_shard(file, *plan, visible, ctx, stream_start);
        if (!shard) return shard.error();
        if (*shard) shards.push_back(std::move(**shard));
    }
    if (plan->shard_limit && *plan->shard_limit == 0) return start;  // TAKE 0
    PlainMerge merge(q, *plan, ctx);
    if (auto st = merge.run(shards, sink); !st) return st.error();
    return start;
}

}  // namespace eventd::query
