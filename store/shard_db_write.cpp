// ShardDb: the writer's transaction (PSD-008 §2.4), sequence accounting (DESIGN.md §4.3),
// WAL checkpoints (§2.4.4) and retention deletes (§3.4).
#include <algorithm>
#include <cerrno>
#include <iterator>
#include <limits>
#include <system_error>

#include "shard_db.hpp"
#include "event_columns.hpp"
#include "sqlite_util.hpp"

namespace eventd::store {

namespace fs = std::filesystem;
using detail::sqlite_error;
using detail::to_sql;

namespace {

Error misuse(const fs::path& file, const std::string& what) { return {EINVAL, file.string() + ": " + what}; }

void bind_guid(sqlite3_stmt* stmt, int i, const kmes::Guid& guid) {
    sqlite3_bind_blob(stmt, i, guid.data(), static_cast<int>(guid.size()), SQLITE_STATIC);
}

void bind_optional_guid(sqlite3_stmt* stmt, int i, const std::optional<kmes::Guid>& guid) {
    if (guid) bind_guid(stmt, i, *guid);  // unbound parameters are NULL
}

// Step a statement that returns no rows, then make it reusable.
int run(sqlite3_stmt* stmt) {
    const int rc = sqlite3_step(stmt);
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
    return rc;
}

// The ranges of `state` that overlap or touch [first, last].
void add_touching(const SequenceRanges& state, uint64_t first, uint64_t last, SequenceRanges& out) {
    const auto& ranges = state.ranges();
    auto it = ranges.upper_bound(first);
    if (it != ranges.begin()) {
        auto before = std::prev(it);
        if (before->second >= first || before->second + 1 == first) out.add(before->first, before->second);
    }
    for (; it != ranges.end() && (last == std::numeric_limits<uint64_t>::max() || it->first <= last + 1); ++it) {
        out.add(it->first, it->second);
    }
}

}  // namespace

bool ShardDb::in_transaction() const { return sqlite3_get_autocommit(db_) == 0; }

Status ShardDb::begin() {
    if (in_transaction()) return misuse(path_, "begin() inside an open transaction");
    pending_.clear();
    return detail::exec(db_, "BEGIN IMMEDIATE", path_);
}

Status ShardDb::insert(const EventRow& row) {
    if (!in_transaction()) return misuse(path_, "insert() outside a transaction");
    sqlite3_stmt* stmt = insert_;
    // insert_event_sql(): parameter ?N is column N of event_columns.hpp (id is not bound).
    using C = EventColumn;
    bind_guid(stmt, index_of(C::boot_id), row.boot_id);
    sqlite3_bind_int64(stmt, index_of(C::timestamp), to_sql(row.timestamp));
    if (row.cpu_id) sqlite3_bind_int(stmt, index_of(C::cpu_id), *row.cpu_id);
    if (row.sequence) sqlite3_bind_int64(stmt, index_of(C::sequence), to_sql(*row.sequence));
    if (row.origin_class) sqlite3_bind_int(stmt, index_of(C::origin_class), *row.origin_class);
    sqlite3_bind_text(stmt, index_of(C::event_type), row.event_type.data(), static_cast<int>(row.event_type.size()),
                      SQLITE_STATIC);
    bind_optional_guid(stmt, index_of(C::effective_token_guid), row.effective_token);
    bind_optional_guid(stmt, index_of(C::true_token_guid), row.true_token);
    bind_optional_guid(stmt, index_of(C::process_guid), row.process);
    if (row.payload) {
        // A present but empty payload stays an empty BLOB: binding a null pointer would store NULL.
        if (row.payload->empty()) {
            sqlite3_bind_zeroblob(stmt, index_of(C::payload), 0);
        } else {
            sqlite3_bind_blob(stmt, index_of(C::payload), row.payload->data(), static_cast<int>(row.payload->size()),
                              SQLITE_STATIC);
        }
    }
    sqlite3_bind_int64(stmt, kEventColumnCount, next_id_);
    const int rc = run(stmt);
    if (rc != SQLITE_DONE) return sqlite_error(db_, rc, path_, "insert an event");
    // Issue 28: the row joins the open segment of the shard's hash chain (row_chain.hpp) under
    // the id it got here.
    if (!segment_.open()) segment_.start(head_, next_id_);
    segment_.add(row.content_digest ? *row.content_digest : row_digest(row));
    ++next_id_;
    return {};
}

Result<ChainHead> ShardDb::close_segment() {
    if (!in_transaction()) return misuse(path_, "close_segment() outside a transaction");
    if (!segment_.open()) return head_;
    const ChainHead head = segment_.finish();
    sqlite3_stmt* stmt = insert_segment_;
    sqlite3_bind_int64(stmt, 1, segment_.last_id());
    sqlite3_bind_int64(stmt, 2, segment_.first_id());
    sqlite3_bind_blob(stmt, 3, head.data(), int(head.size()), SQLITE_STATIC);
    const auto& tags = segment_.tags();
    sqlite3_bind_blob(stmt, 4, tags.data(), int(tags.size()), SQLITE_STATIC);
    const int rc = run(stmt);
    if (rc != SQLITE_DONE) return sqlite_error(db_, rc, path_, "record a segment of the hash chain");
    head_ = head;
    return head;
}

Status ShardDb::account(const kmes::Guid& boot_id, uint16_t cpu_id, uint64_t first, uint64_t last) {
    if (!in_transaction()) return misuse(path_, "account() outside a transaction");
    if (first > last) {
        return misuse(path_, "account() with first " + std::to_string(first) + " > last " + std::to_string(last));
    }
    pending_[BootCpu{boot_id, cpu_id}].add(first, last);
    return {};
}

std::vector<std::pair<uint64_t, uint64_t>> ShardDb::unaccounted(const kmes::Guid& boot_id, uint16_t cpu_id,
                                                                uint64_t first, uint64_t last,
                                                                const SequenceState* elsewhere) const {
    const BootCpu key{boot_id, cpu_id};
    auto left = not_accounted(pending_, key, not_accounted(state_, key, {{first, last}}));
    return elsewhere ? not_accounted(*elsewhere, key, std::move(left)) : left;
}

bool ShardDb::accounted(const kmes::Guid& boot_id, uint16_t cpu_id, uint64_t first, uint64_t last,
                        const SequenceState* elsewhere) const {
    if (first != last) return unaccounted(boot_id, cpu_id, first, last, elsewhere).empty();
    const BootCpu key{boot_id, cpu_id};
    auto holds = [&](const SequenceState& state) {
        const auto it = state.find(key);
        return it != state.end() && it->second.contains(first);
    };
    return holds(state_) || holds(pending_) || (elsewhere && holds(*elsewhere));
}

Result<bool> ShardDb::contains_same(const EventRow& row, bool any_boot) {
    sqlite3_stmt* stmt = find_same_;
    sqlite3_bind_int64(stmt, 1, to_sql(row.timestamp));
    bind_guid(stmt, 2, row.boot_id);
    sqlite3_bind_text(stmt, 3, row.event_type.data(), static_cast<int>(row.event_type.size()), SQLITE_STATIC);
    if (row.payload) {
        if (row.payload->empty())
            sqlite3_bind_zeroblob(stmt, 4, 0);
        else
            sqlite3_bind_blob(stmt, 4, row.payload->data(), static_cast<int>(row.payload->size()), SQLITE_STATIC);
    }
    if (row.cpu_id) sqlite3_bind_int(stmt, 5, *row.cpu_id);
    sqlite3_bind_int(stmt, 6, any_boot ? 1 : 0);
    const int rc = run(stmt);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    return sqlite_error(db_, rc, path_, "look for a stored copy of a record");
}

// Rewrite the sequence_state rows that the pending ranges of `key` change: every stored
// range touching a pending one is absorbed into a coalesced range [F, L], so deleting the
// rows whose first_sequence lies in [F, L] and inserting [F, L] keeps the table coalesced
// while touching only the rows that changed (a CPU feeding several shards leaves many ranges).
Status ShardDb::write_ranges(const BootCpu& key, const SequenceRanges& pending) {
    SequenceRanges changed = pending;
    if (auto it = state_.find(key); it != state_.end()) {
        for (const auto& [first, last] : pending.ranges()) add_touching(it->second, first, last, changed);
    }
    for (const auto& [first, last] : changed.ranges()) {
        for (sqlite3_stmt* stmt : {delete_ranges_, insert_range_}) {
            bind_guid(stmt, 1, key.boot_id);
            sqlite3_bind_int(stmt, 2, key.cpu_id);
            sqlite3_bind_int64(stmt, 3, to_sql(first));
            sqlite3_bind_int64(stmt, 4, to_sql(last));
            const int rc = run(stmt);
            if (rc != SQLITE_DONE) return sqlite_error(db_, rc, path_, "update sequence_state");
        }
    }
    return {};
}

Status ShardDb::commit() {
    if (!in_transaction()) return misuse(path_, "commit() outside a transaction");
    for (const auto& [key, ranges] : pending_) {
        if (auto s = write_ranges(key, ranges); !s) {
            rollback();
            return s;
        }
    }
    if (next_id_ != committed_next_id_) {
        if (auto head = close_segment(); !head) {
            rollback();
            return head.error();
        }
        sqlite3_bind_text(save_max_id_, 1, std::to_string(next_id_ - 1).c_str(), -1, SQLITE_TRANSIENT);
        int rc = run(save_max_id_);
        // The chain's head goes with the rows, so that the next writer goes on from it.
        if (rc == SQLITE_DONE) rc = save_metadata("chain_head", chain_point_text({next_id_ - 1, head_}));
        if (rc == SQLITE_DONE && last_checkpoint_ != committed_last_checkpoint_)
            rc = save_metadata("last_checkpoint", *last_checkpoint_);
        if (rc != SQLITE_DONE) {
            Error error = sqlite_error(db_, rc, path_, "record the largest row id and the chain's head");
            rollback();
            return error;
        }
    }
    const int rc = sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) {
        Error error = sqlite_error(db_, rc, path_, "commit");
        rollback();
        return error;
    }
    for (const auto& [key, ranges] : pending_) state_[key].add(ranges);
    pending_.clear();
    committed_next_id_ = next_id_;
    committed_head_ = head_;
    committed_last_checkpoint_ = last_checkpoint_;
    return {};
}

int ShardDb::save_metadata(const char* key, const std::string& value) {
    sqlite3_bind_text(save_metadata_, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(save_metadata_, 2, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
    return run(save_metadata_);
}

Status ShardDb::set_last_checkpoint(const std::string& hash_hex) {
    if (!in_transaction()) return misuse(path_, "set_last_checkpoint() outside a transaction");
    last_checkpoint_ = hash_hex;
    return {};
}

void ShardDb::rollback() {
    pending_.clear();
    next_id_ = committed_next_id_;  // the rolled-back rows' ids were never committed
    head_ = committed_head_;
    segment_.discard();
    last_checkpoint_ = committed_last_checkpoint_;
    // After some errors (SQLITE_FULL among them) SQLite has already rolled back by itself.
    if (in_transaction()) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

void ShardDb::checkpoint_if_needed(int threshold_pages) {
    if (wal_pages_ < threshold_pages || in_transaction()) return;
    int wal_frames = 0;
    int checkpointed = 0;
    // PASSIVE never waits for readers or writers: what a reader still needs stays in the WAL
    // and the next call retries (§2.4.4).
    const int rc = sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, &wal_frames, &checkpointed);
    if (rc == SQLITE_OK && checkpointed == wal_frames) wal_pages_ = 0;  // the next commit restarts the WAL
}

Result<uint64_t> ShardDb::delete_oldest(uint64_t cutoff_ns, uint32_t limit) {
    if (in_transaction()) return misuse(path_, "delete_oldest() inside the writer's transaction");
    if (!last_checkpoint_) return delete_by_timestamp(cutoff_ns, limit);
    return cut_sealed_prefix(cutoff_ns, limit);
}

Result<uint64_t> ShardDb::free_oldest(uint64_t bound_ns, uint32_t limit) {
    if (in_transaction()) return misuse(path_, "free_oldest() inside the writer's transaction");
    if (!last_checkpoint_) return delete_by_timestamp(bound_ns, limit);
    return cut_sealed_prefix(0, limit);
}

Result<uint64_t> ShardDb::delete_by_timestamp(uint64_t cutoff_ns, uint32_t limit) {
    sqlite3_stmt* stmt = delete_oldest_;
    if (cutoff_ns != 0) {
        stmt = delete_before_;
        const uint64_t cutoff = std::min<uint64_t>(cutoff_ns, std::numeric_limits<int64_t>::max());
        sqlite3_bind_int64(stmt, 1, to_sql(cutoff));
        sqlite3_bind_int64(stmt, 2, limit);
    } else {
        sqlite3_bind_int64(stmt, 1, limit);
    }
    int rc = run(stmt);  // one statement: its own transaction, committed before return
    if (rc != SQLITE_DONE) return sqlite_error(db_, rc, path_, "retention delete");
    const auto deleted = static_cast<uint64_t>(sqlite3_changes64(db_));
    // The segments of the rows gone (those that still cover a row stay: its chain breaks there,
    // which is what an unsealed store's retention does to it).
    sqlite3_bind_int64(delete_segments_before_, 1, next_id_);
    rc = run(delete_segments_before_);
    if (rc != SQLITE_DONE) return sqlite_error(db_, rc, path_, "retention: delete the chain's old segments");
    return deleted;
}

Result<uint64_t> ShardDb::cut_sealed_prefix(uint64_t cutoff_ns, uint32_t limit) {
    const int64_t cutoff = to_sql(std::min<uint64_t>(cutoff_ns, std::numeric_limits<int64_t>::max()));
    // 1. Rows at or before the origin: a prefix already cut (a crash or the batch limit left
    // some), or rows from before the chain.
    sqlite3_stmt* stmt = origin_by_retention_ ? delete_through_ : delete_pre_chain_;
    sqlite3_bind_int64(stmt, 1, origin_id_);
    if (origin_by_retention_) {
        sqlite3_bind_int64(stmt, 2, limit);
    } else {
        sqlite3_bind_int64(stmt, 2, cutoff);
        sqlite3_bind_int64(stmt, 3, limit);
    }
    if (const int rc = run(stmt); rc != SQLITE_DONE) return sqlite_error(db_, rc, path_, "retention delete");
    if (const int64_t n = sqlite3_changes64(db_); n > 0) return uint64_t(n);

    // 2. The next sealed prefix: up to a checkpoint with a row before it (origin + 1 may be the
    // anchor itself), the last one before the cutoff or, without one, the first.
    sqlite3_stmt* find = cutoff_ns != 0 ? anchor_before_ : anchor_next_;
    const std::string file_id = chain_hex(file_id_);
    int next = 1;
    if (cutoff_ns != 0) sqlite3_bind_int64(find, next++, cutoff);
    sqlite3_bind_int64(find, next++, origin_id_ + 1);
    sqlite3_bind_text(find, next, file_id.data(), static_cast<int>(file_id.size()), SQLITE_STATIC);
    int rc = sqlite3_step(find);
    std::optional<ChainPoint> anchor;
    if (rc == SQLITE_ROW) {
        const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(find, 1));
        const auto head = text ? chain_from_hex(text) : std::nullopt;
        if (head) anchor = ChainPoint{sqlite3_column_int64(find, 0) - 1, *head};
    }
    sqlite3_reset(find);
    sqlite3_clear_bindings(find);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return sqlite_error(db_, rc, path_, "find a sealed prefix");
    if (!anchor) return uint64_t(0);  // nothing sealed to delete (an unreadable head is verify's to report)

    // The origin moves and the first batch goes in one transaction: a crash leaves either
    // nothing done, or an origin whose rows before it step 1 deletes next time.
    if (auto s = detail::exec(db_, "BEGIN IMMEDIATE", path_); !s) return s.error();
    rc = save_metadata("chain_origin", chain_point_text(*anchor));
    if (rc == SQLITE_DONE) {
        // The anchor begins a segment (a checkpoint closes the one before it): every segment
        // up to it lies in the prefix.
        sqlite3_bind_int64(delete_segments_through_, 1, anchor->id);
        rc = run(delete_segments_through_);
    }
    if (rc == SQLITE_DONE) {
        sqlite3_bind_int64(delete_through_, 1, anchor->id);
        sqlite3_bind_int64(delete_through_, 2, limit);
        rc = run(delete_through_);
    }
    const int64_t deleted = sqlite3_changes64(db_);
    if (rc == SQLITE_DONE) rc = sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) == SQLITE_OK ? SQLITE_DONE : rc;
    if (rc != SQLITE_DONE) {
        Error error = sqlite_error(db_, rc, path_, "retention: cut a sealed prefix");
        if (in_transaction()) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        return error;
    }
    origin_id_ = anchor->id;
    origin_by_retention_ = true;
    return uint64_t(deleted);
}

Status ShardDb::restart_chain() {
    if (in_transaction()) return misuse(path_, "restart_chain() inside a transaction");
    const int64_t last = next_id_ - 1;
    if (last == origin_id_) return {};
    const ChainPoint start{last, chain_origin(file_id_, last)};
    if (auto s = detail::exec(db_, "BEGIN IMMEDIATE", path_); !s) return s;
    int rc = save_metadata("chain_origin", chain_point_text(start));
    if (rc == SQLITE_DONE) rc = save_metadata("chain_head", chain_point_text(start));
    if (rc == SQLITE_DONE) {
        sqlite3_bind_int64(delete_segments_through_, 1, last);  // the rows before now are outside it
        rc = run(delete_segments_through_);
    }
    if (rc == SQLITE_DONE) rc = sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) == SQLITE_OK ? SQLITE_DONE : rc;
    if (rc != SQLITE_DONE) {
        Error error = sqlite_error(db_, rc, path_, "restart the hash chain");
        if (in_transaction()) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        return error;
    }
    origin_id_ = last;
    origin_by_retention_ = false;
    head_ = committed_head_ = start.head;
    return {};
}

Result<std::optional<uint64_t>> ShardDb::oldest_timestamp() {
    const int rc = sqlite3_step(oldest_);
    std::optional<uint64_t> oldest;
    if (rc == SQLITE_ROW && sqlite3_column_type(oldest_, 0) != SQLITE_NULL) {
        oldest = detail::from_sql(sqlite3_column_int64(oldest_, 0));
    }
    sqlite3_reset(oldest_);
    if (rc != SQLITE_ROW) return sqlite_error(db_, rc, path_, "find the oldest timestamp");
    return oldest;
}

uint64_t ShardDb::size_bytes() const {
    std::error_code ec;
    uint64_t total = 0;
    const uint64_t db_size = fs::file_size(path_, ec);
    if (!ec) total += db_size;
    fs::path wal = path_;
    wal += "-wal";
    const uint64_t wal_size = fs::file_size(wal, ec);
    if (!ec) total += wal_size;
    return total;
}

uint64_t ShardDb::used_bytes() const {
    auto pragma = [this](const char* sql) -> uint64_t {
        auto stmt = detail::prepare(db_, sql, path_);
        if (!stmt || sqlite3_step(stmt->get()) != SQLITE_ROW) return 0;
        return detail::from_sql(sqlite3_column_int64(stmt->get(), 0));
    };
    const uint64_t pages = pragma("PRAGMA page_count");
    const uint64_t free_pages = pragma("PRAGMA freelist_count");
    return (pages > free_pages ? pages - free_pages : 0) * pragma("PRAGMA page_size");
}

}  // namespace eventd::store
