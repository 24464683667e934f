// A resumed stream's catch-up; see resume.hpp for the steps.
#include "eventd/query/resume.hpp"

#include <cerrno>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "base/guid_text.hpp"
#include "eventd/query/planner.hpp"
#include "store/shard_catalog.hpp"

namespace eventd::query {
namespace {

using base::Error;
using store::EventColumn;
using store::FileId;
using store::StorePosition;

// One shard file opened for a resumed read, with the cursor's position in it.
struct CatchUpFile {
    store::ShardSnapshot snapshot;
    FileId file;
    int64_t after = 0;   // the cursor's position in it (0: nothing delivered)
    int64_t issued = 0;  // the largest id it ever had
};

// `file` opened for the caller of `ctx` (open_snapshot) with its id and the position `wanted`
// names for it. nullopt: a file the query may leave out.
base::Result<std::optional<CatchUpFile>> open_file(const store::ShardFile& file, const store::RowFilter& visible,
                                                   ExecutionContext& ctx, const std::map<FileId, int64_t>& wanted) {
    auto snapshot = open_snapshot(file, visible, ctx);
    if (!snapshot) return snapshot.error();
    if (!*snapshot) return std::optional<CatchUpFile>{};
    auto id = (*snapshot)->file_id();
    if (!id) return query_error(id.error(), ctx);
    auto issued = (*snapshot)->max_id_issued();
    if (!issued) return query_error(issued.error(), ctx);
    const auto known = wanted.find(*id);
    const int64_t after = known == wanted.end() ? 0 : known->second;
    return std::optional<CatchUpFile>{CatchUpFile{std::move(**snapshot), *id, after, *issued}};
}

// The single number a count plan yields.
base::Result<uint64_t> count_of(store::ShardSnapshot& snapshot, const store::ReadPlan& count) {
    auto rows = snapshot.run(count);
    if (!rows) return rows.error();
    auto has = rows->next();
    if (!has) return has.error();
    return static_cast<uint64_t>(rows->row().integer(0));
}

store::Predicate id_compare(store::ReadOp op, int64_t value) {
    store::Predicate p;
    p.field = store::ReadField::of(EventColumn::id);
    p.op = op;
    p.values = {value};
    return p;
}

// Rows of `f` still stored with after < id <= issued (every type: deleted rows cannot be
// filtered, so the gap is counted over all of them alike).
base::Result<uint64_t> stored_after(CatchUpFile& f) {
    store::ReadPlan count;
    count.shape = store::ReadPlan::Shape::count;
    count.bounds = {id_compare(store::ReadOp::gt, f.after), id_compare(store::ReadOp::le, f.issued)};
    return count_of(f.snapshot, count);
}

// The start of the refusal for a cursor of another store.
std::string another_store(const store::StoreId& cursor, const store::StoreId& here) {
    return "this cursor belongs to another event store (" + base::guid_text(cursor) + "; this one is " +
           base::guid_text(here) + ")";
}

}  // namespace

bool is_count_after(const Query& q) {
    return q.aggregation.kind == Aggregation::Kind::count && !q.stream;
}

base::Status check_resumable(const Query& q) {
    std::vector<std::string> clauses;
    if (q.since_ns) clauses.push_back("SINCE");
    if (q.until_ns) clauses.push_back("UNTIL");
    if (!q.sort.empty()) clauses.push_back("SORT");
    if (q.skip) clauses.push_back("SKIP");
    if (q.take) clauses.push_back("TAKE");
    if (q.aggregation.kind != Aggregation::Kind::none && !is_count_after(q)) clauses.push_back("an aggregate");
    if (clauses.empty()) return {};
    std::string list;
    for (size_t i = 0; i < clauses.size(); ++i) list += (i ? ", " : "") + clauses[i];
    return Error{EINVAL, "a resumed stream (after) delivers every matching record after the cursor in store order; "
                         "it cannot be combined with " +
                             list + " (they shape an initial result, and a resumed stream has none)"};
}

base::Result<uint64_t> count_after(const Query& q, ExecutionContext& ctx, const store::StoreId& store,
                                   const std::optional<StorePosition>& from) {
    if (auto st = check_resumable(q); !st) return st.error();
    if (from && from->store != store) return Error{EINVAL, another_store(from->store, store) + ": nothing to count after it"};
    auto plan = plan_live(q, ctx.access->filters_rows());
    if (!plan) return plan.error();
    auto files = store::list_shard_files(ctx.store_dir);
    if (!files) return query_error(files.error(), ctx);
    const store::RowFilter visible = caller_visibility(ctx);
    const std::map<FileId, int64_t> wanted = from ? from->last_id : std::map<FileId, int64_t>{};
    uint64_t total = 0;
    for (const store::ShardFile& file : *files) {
        auto f = open_file(file, visible, ctx, wanted);
        if (!f) return f.error();
        if (!*f) continue;
        // The live plan's filters, counted: the records a resumed stream would deliver.
        store::ReadPlan count = plan->read;
        count.shape = store::ReadPlan::Shape::count;
        count.bounds.push_back(id_compare(store::ReadOp::gt, (*f)->after));
        auto n = count_of((*f)->snapshot, count);
        if (!n) return query_error(n.error(), ctx);
        total += *n;
    }
    return total;
}

base::Result<StreamStart> catch_up(const Query& q, ExecutionContext& ctx, const store::StoreId& store,
                                   const std::optional<StorePosition>& from, bool allow_gap,
                                   const std::function<base::Status(const Gap&)>& on_gap, const PositionedSink& sink) {
    if (auto st = check_resumable(q); !st) return st.error();
    auto plan = plan_live(q, ctx.access->filters_rows());
    if (!plan) return plan.error();

    StreamStart start;
    start.position.store = store;

    Gap gap;
    uint64_t lost = 0;
    bool lost_unknown = false;
    std::map<FileId, int64_t> wanted = from ? from->last_id : std::map<FileId, int64_t>{};
    if (from && from->store != store) {
        if (!allow_gap)
            return Error{EINVAL, another_store(from->store, store) +
                                     ": start without it, or ask with allow_gap to read this store from its oldest record"};
        wanted.clear();
        lost_unknown = true;
        gap.detail = "the cursor belongs to another event store; resumed at this store's oldest record";
    }

    auto files = store::list_shard_files(ctx.store_dir);
    if (!files) return query_error(files.error(), ctx);
    const store::RowFilter visible = caller_visibility(ctx);

    // Every file's snapshot and gap first: a refusal must come before any record.
    std::vector<CatchUpFile> open;
    std::set<FileId> seen;
    std::vector<std::string> short_files;
    for (const store::ShardFile& file : *files) {
        auto opened = open_file(file, visible, ctx, wanted);
        if (!opened) return opened.error();
        if (!*opened) continue;  // unreadable and skippable: if the cursor names it, it is "gone" below
        CatchUpFile f = std::move(**opened);
        seen.insert(f.file);
        if (f.issued > f.after) {
            auto stored = stored_after(f);
            if (!stored) return query_error(stored.error(), ctx);
            const uint64_t deleted = static_cast<uint64_t>(f.issued - f.after) - *stored;
            if (deleted > 0) {
                lost += deleted;
                short_files.push_back(file.name + " (" + std::to_string(deleted) + ")");
            }
        }
        open.push_back(std::move(f));
    }
    for (const auto& [file, last] : wanted) {
        if (seen.count(file)) continue;
        lost_unknown = true;
        short_files.push_back("a file that is gone or unreadable (delivered up to its row id " + std::to_string(last) + ")");
    }

    if (lost > 0 || lost_unknown) {
        std::string where;
        for (size_t i = 0; i < short_files.size(); ++i) where += (i ? ", " : "") + short_files[i];
        const std::string count = lost_unknown ? "an unknown number of" : std::to_string(lost);
        if (!allow_gap)
            return Error{EINVAL, "the cursor's position is no longer stored: " + count +
                                     " records after it were deleted (retention) or are in files that are gone: " +
                                     where + "; ask with allow_gap to go on with the records still stored after it"};
        if (gap.detail.empty()) gap.detail = count + " records after the cursor were deleted: " + where;
        if (!lost_unknown) gap.lost = lost;
        if (auto st = on_gap(gap); !st) return st.error();
    }

    RowEncoder encoder(q.select, *ctx.access);
    for (CatchUpFile& f : open) {
        auto rows = f.snapshot.run(plan->read);
        if (!rows) return query_error(rows.error(), ctx);
        int64_t watermark = f.after;
        if (auto st = read_after(*rows, f.file, watermark, f.snapshot.watermark(), encoder, sink); !st)
            return query_error(st.error(), ctx);
        // Past what retention deleted too: it was counted (or refused) once, not at every resume.
        const int64_t past = std::max(watermark, f.issued);
        if (past > 0) start.position.last_id[f.file] = past;
    }
    return start;
}

}  // namespace eventd::query
