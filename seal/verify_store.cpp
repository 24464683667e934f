#include "seal/verify_store.hpp"

#include <sqlite3.h>

#include <cerrno>
#include <cstring>
#include <charconv>
#include <cstdint>
#include <ctime>

#include "base/hex.hpp"
#include "base/reserved_types.hpp"
#include "seal/checkpoint.hpp"
#include "store/event_columns.hpp"
#include "store/row_chain.hpp"
#include "store/schema.hpp"
#include "store/shard_db.hpp"
#include "store/sqlite_util.hpp"

namespace eventd::seal {
namespace fs = std::filesystem;
using store::ChainHead;
using store::EventColumn;
using store::index_of;

namespace {

constexpr uint64_t kFutureSlackNs = 300ull * 1'000'000'000u;  // a clock stepped back by up to 5 min
constexpr uint64_t kGapSlackNs = 60ull * 1'000'000'000u;      // a restart's worth beyond 2 intervals
constexpr int64_t kReorderSearch = 10000;                     // rows looked at for a moved row


std::string row_text(int64_t id) { return "row " + std::to_string(id); }

// "row 7" or "rows 7..9"
std::string rows_text(int64_t first, int64_t last) {
    return first == last ? row_text(first) : "rows " + std::to_string(first) + ".." + std::to_string(last);
}

// One row as read, with whether every column has the storage class eventd writes.
struct ReadRow {
    store::StoredRow row;
    bool well_typed = true;
};

// One row of chain_segments (row_chain.hpp), as read; `well_formed` false when its columns
// cannot be a segment eventd wrote.
struct Segment {
    int64_t first = 0, last = 0;
    ChainHead head{};
    std::vector<uint8_t> tags;
    bool well_formed = false;

    store::RowTag tag_of(int64_t id) const {
        store::RowTag tag;
        std::memcpy(tag.data(), tags.data() + size_t(id - first) * store::kTagBytes, store::kTagBytes);
        return tag;
    }
};

Segment read_segment(sqlite3_stmt* s) {
    Segment g;
    g.last = sqlite3_column_int64(s, 0);
    g.first = sqlite3_column_int64(s, 1);
    const int head_bytes = sqlite3_column_bytes(s, 2);
    const auto* head = static_cast<const uint8_t*>(sqlite3_column_blob(s, 2));
    const auto* tags = static_cast<const uint8_t*>(sqlite3_column_blob(s, 3));
    const size_t tag_bytes = size_t(sqlite3_column_bytes(s, 3));
    g.well_formed = sqlite3_column_type(s, 0) == SQLITE_INTEGER && sqlite3_column_type(s, 1) == SQLITE_INTEGER &&
                    g.first >= 1 && g.first <= g.last && head && head_bytes == int(g.head.size()) &&
                    tag_bytes == size_t(g.last - g.first + 1) * store::kTagBytes;
    if (!g.well_formed) return g;
    std::memcpy(g.head.data(), head, g.head.size());
    g.tags.assign(tags, tags + tag_bytes);
    return g;
}

constexpr const char* kSegmentsSql =
    "SELECT last_id, first_id, head, tags FROM chain_segments WHERE last_id > ?1 ORDER BY last_id";

std::optional<std::span<const uint8_t>> blob(sqlite3_stmt* s, int i, bool& ok, bool nullable = true) {
    const int type = sqlite3_column_type(s, i);
    if (type == SQLITE_NULL) {
        ok = ok && nullable;
        return std::nullopt;
    }
    if (type != SQLITE_BLOB) ok = false;
    const auto* p = static_cast<const uint8_t*>(sqlite3_column_blob(s, i));
    return std::span<const uint8_t>(p, size_t(sqlite3_column_bytes(s, i)));
}

// An INTEGER column (or NULL) within [min, max]: a value out of its column's range (a cpu_id of
// 70000) is a change like any other. One type and one value call per column: verify reads
// tens of millions of rows.
template <class T>
std::optional<T> integer(sqlite3_stmt* s, int i, bool& ok, int64_t max = INT64_MAX, int64_t min = INT64_MIN) {
    const int type = sqlite3_column_type(s, i);
    if (type == SQLITE_NULL) return std::nullopt;
    const int64_t v = sqlite3_column_int64(s, i);
    if (type != SQLITE_INTEGER || v < min || v > max) ok = false;
    return T(v);
}

ReadRow read_row(sqlite3_stmt* s) {
    ReadRow r;
    bool ok = sqlite3_column_type(s, index_of(EventColumn::id)) == SQLITE_INTEGER;
    r.row.id = sqlite3_column_int64(s, index_of(EventColumn::id));
    r.row.boot_id = blob(s, index_of(EventColumn::boot_id), ok, false).value_or(std::span<const uint8_t>());
    ok = ok && sqlite3_column_type(s, index_of(EventColumn::timestamp)) == SQLITE_INTEGER;
    r.row.timestamp = uint64_t(sqlite3_column_int64(s, index_of(EventColumn::timestamp)));
    r.row.cpu_id = integer<uint16_t>(s, index_of(EventColumn::cpu_id), ok, 0xffff, 0);
    r.row.sequence = integer<uint64_t>(s, index_of(EventColumn::sequence), ok);
    r.row.origin_class = integer<uint8_t>(s, index_of(EventColumn::origin_class), ok, 0xff, 0);
    const int type_column = index_of(EventColumn::event_type);
    ok = ok && sqlite3_column_type(s, type_column) == SQLITE_TEXT;
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(s, type_column));
    r.row.event_type = std::string_view(text ? text : "", size_t(sqlite3_column_bytes(s, type_column)));
    r.row.effective_token = blob(s, index_of(EventColumn::effective_token_guid), ok);
    r.row.true_token = blob(s, index_of(EventColumn::true_token_guid), ok);
    r.row.process = blob(s, index_of(EventColumn::process_guid), ok);
    r.row.payload = blob(s, index_of(EventColumn::payload), ok);
    r.well_typed = ok;
    return r;
}

class FileVerifier {
public:
    FileVerifier(const fs::path& file, const VerifyOptions& options) : file_(file), options_(options) {
        report_.file = file.filename().string();
    }

    FileReport run() {
        sqlite3* raw = nullptr;
        // Read-only and never creating anything: a copy of a store is verified as it is.
        const std::string uri = store::detail::file_uri(file_, "mode=ro");
        // NOMUTEX: this connection is used by one thread only; SQLite otherwise locks a mutex in
        // each of the ~40 column reads per row (12 % of verify's CPU, docs/PERFORMANCE.md §16).
        int rc = sqlite3_open_v2(uri.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, nullptr);
        db_.reset(raw);
        if (rc != SQLITE_OK) {
            fail_file(FindingKind::unreadable, sqlite3_errstr(rc));
            return std::move(report_);
        }
        sqlite3_busy_timeout(raw, 5000);
        // One read transaction: metadata and rows from the same snapshot, so that a running
        // eventd's commits in between never look like rows beyond the largest id issued.
        if (auto s = store::detail::exec(raw, "BEGIN", file_); !s) {
            fail_file(FindingKind::unreadable, s.error().message);
            return std::move(report_);
        }
        if (load_origin()) walk();
        sqlite3_exec(raw, "ROLLBACK", nullptr, nullptr, nullptr);
        return std::move(report_);
    }

private:
    void fail_file(FindingKind kind, const std::string& what) { report_.broken = Finding{kind, report_.file, 0, 0, what}; }

    void fail(FindingKind kind, int64_t row, uint64_t time_ns, const std::string& what) {
        if (!report_.broken) report_.broken = Finding{kind, report_.file, row, time_ns, what};
    }

    bool load_origin() {
        auto id = store::detail::read_file_id(db_.get(), file_);
        if (!id || !*id) {
            fail_file(FindingKind::unreadable, id ? "metadata has no file_id" : id.error().message);
            return false;
        }
        file_id_ = **id;
        auto origin = store::detail::read_metadata(db_.get(), "chain_origin", file_);
        if (!origin) {
            fail_file(FindingKind::unreadable, origin.error().message);
            return false;
        }
        if (!*origin) {
            fail_file(FindingKind::not_chained,
                      "the file has no hash chain: no eventd that chains rows has opened it since it was made");
            return false;
        }
        const auto point = store::parse_chain_point(**origin);
        if (!point) {
            fail_file(FindingKind::bad_checkpoint, "metadata chain_origin '" + **origin + "' is malformed");
            return false;
        }
        // A start is derived from the file's id and its row: it cannot be chosen to fit rows.
        // Any other origin is an anchor retention left: the checkpoint right after it must
        // have signed exactly that head (walk()).
        origin_id_ = point->id;
        head_ = point->head;
        anchored_ = point->head != store::chain_origin(file_id_, point->id);
        // The metadata's own value, not max(id) beside it: a row beyond it was not eventd's.
        // (A file whose writer never committed has none: then nothing bounds its ids.)
        auto issued = store::detail::read_metadata(db_.get(), "max_id_issued", file_);
        if (issued && *issued) {
            const auto [end, ec] = std::from_chars((*issued)->data(), (*issued)->data() + (*issued)->size(), max_id_issued_);
            if (ec != std::errc() || end != (*issued)->data() + (*issued)->size()) max_id_issued_ = 0;
        }
        if (!issued || !*issued || max_id_issued_ <= 0) max_id_issued_ = INT64_MAX;
        return true;
    }

    void walk() {
        const std::string sql = "SELECT " + store::event_select_list() + " FROM events ORDER BY id";
        auto stmt = store::detail::prepare(db_.get(), sql.c_str(), file_);
        if (!stmt) return (void)fail_file(FindingKind::unreadable, stmt.error().message);
        auto segments = store::detail::prepare(db_.get(), kSegmentsSql, file_);
        if (!segments) return (void)fail_file(FindingKind::unreadable, segments.error().message);
        segments_stmt_ = std::move(*segments);
        segments_ = segments_stmt_.get();
        sqlite3_bind_int64(segments_, 1, origin_id_);
        int64_t expected = origin_id_ + 1;
        int rc;
        while ((rc = sqlite3_step(stmt->get())) == SQLITE_ROW) {
            const ReadRow r = read_row(stmt->get());
            ++report_.rows;
            if (options_.progress && report_.rows % 100000 == 0) options_.progress(report_.file, report_.rows);
            if (r.row.id <= origin_id_) {
                ++(anchored_ ? report_.awaiting_retention_rows : report_.pre_chain_rows);
                continue;
            }
            if (r.row.id > max_id_issued_) {
                return fail(FindingKind::inserted_row, r.row.id, r.row.timestamp,
                            row_text(r.row.id) + " (" + std::string(r.row.event_type) + ") was inserted: eventd " +
                                "issued ids up to " + std::to_string(max_id_issued_) + " only");
            }
            if (r.row.id != expected) {
                return fail(FindingKind::missing_rows, expected, r.row.timestamp,
                            rows_text(expected, r.row.id - 1) + (r.row.id - 1 == expected ? " is" : " are") +
                                " missing (deleted) before " + row_text(r.row.id) + " of " +
                                finding_time(r.row.timestamp));
            }
            if (anchored_ && r.row.id == origin_id_ + 1 && r.row.event_type != kCheckpointType) {
                return fail(FindingKind::missing_rows, origin_id_ + 1, r.row.timestamp,
                            "the chain starts after row " + std::to_string(origin_id_) +
                                " without the checkpoint retention keeps there: rows were deleted by other means");
            }
            if (!segment_ && !open_segment(r)) return;
            const store::RowDigest digest = store::row_digest(r.row);
            if (!r.well_typed || store::row_tag(digest) != segment_->tag_of(r.row.id)) return break_at(r, digest);
            if (r.row.event_type == kCheckpointType && own_checkpoint(r)) {
                // A checkpoint signs the head before its row, where the writer closed a segment.
                if (r.row.id != segment_->first) {
                    return fail(FindingKind::bad_checkpoint, r.row.id, r.row.timestamp,
                                "the checkpoint at " + row_text(r.row.id) +
                                    " is not where a segment of the chain begins (moved or copied there)");
                }
                if (!check_checkpoint(r, head_)) return;
            }
            hasher_.add(digest);
            if (r.row.id == segment_->last && !close_segment()) return;
            expected = r.row.id + 1;
            // The time of the first row no checkpoint covers yet (a checkpoint resets it).
            if (report_.sealed_through != r.row.id && first_unsealed_time_ == 0) first_unsealed_time_ = r.row.timestamp;
        }
        if (rc != SQLITE_DONE) return fail(FindingKind::unreadable, expected, 0, sqlite3_errmsg(db_.get()));
        if (options_.progress) options_.progress(report_.file, report_.rows);
        // Deleted at the end: the file had issued larger ids than it holds, or the chain
        // records rows it no longer has (max_id_issued mended too).
        int64_t recorded = max_id_issued_ != INT64_MAX ? max_id_issued_ : expected - 1;
        if (segment_) recorded = std::max(recorded, segment_->last);
        if (sqlite3_step(segments_) == SQLITE_ROW) recorded = std::max(recorded, read_segment(segments_).last);
        if (recorded >= expected) {
            return fail(FindingKind::missing_rows, expected, 0,
                        rows_text(expected, recorded) + " missing at the end (the file issued ids up to " +
                            std::to_string(recorded) + ")");
        }
        const int64_t last = expected - 1;
        if (last > report_.sealed_through) {
            // After a shutdown's checkpoint, only a new start writes rows, and its first commit
            // carries a checkpoint: unsealed rows there were written by someone else.
            if (previous_ && previous_->final) {
                return fail(FindingKind::inserted_row, report_.sealed_through + 1, first_unsealed_time_,
                            rows_text(report_.sealed_through + 1, last) +
                                (last == report_.sealed_through + 1 ? " follows" : " follow") +
                                " eventd's shutdown checkpoint unsealed: written while eventd was stopped, "
                                "or by an eventd that could not seal (keys ended or removed: see its log) — eventd "
                                "seals the first commit of every start");
            }
            report_.unsealed = Finding{FindingKind::unsealed_rows, report_.file, report_.sealed_through + 1,
                                       first_unsealed_time_,
                                       rows_text(report_.sealed_through + 1, last) +
                                           " chained but not sealed yet (after the last checkpoint; eventd seals every "
                                           "CheckpointIntervalSeconds and at shutdown)"};
        }
    }

    // The segment that must begin at row r: the next one recorded.
    bool open_segment(const ReadRow& r) {
        const int64_t id = r.row.id;
        const int rc = sqlite3_step(segments_);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
            fail(FindingKind::unreadable, id, 0, sqlite3_errmsg(db_.get()));
            return false;
        }
        if (rc == SQLITE_DONE) {
            fail(FindingKind::inserted_row, id, r.row.timestamp,
                 row_text(id) + " (" + std::string(r.row.event_type) + " of " + finding_time(r.row.timestamp) +
                     ") is in no segment of the chain: inserted without eventd (or the chain's record of it deleted)");
            return false;
        }
        Segment next = read_segment(segments_);
        if (!next.well_formed || next.first != id) {
            const bool later = next.well_formed && next.first > id;
            fail(later ? FindingKind::inserted_row : FindingKind::changed_segment, id, r.row.timestamp,
                 later ? rows_text(id, next.first - 1) + " are in no segment of the chain: inserted without eventd "
                             "(or the chain's record of them deleted)"
                       : "the chain's segment ending at " + row_text(next.last) +
                             " is not the one that follows " + row_text(id - 1) + ": it was changed");
            return false;
        }
        segment_ = std::move(next);
        hasher_.start(head_, segment_->first);
        return true;
    }

    // Every row of the segment matched its tag; the link over them must be the one recorded.
    bool close_segment() {
        const ChainHead head = hasher_.finish();
        if (head != segment_->head) {
            fail(FindingKind::changed_segment, segment_->first, 0,
                 rows_text(segment_->first, segment_->last) +
                     " are not what their segment of the chain recorded: its head or tags were changed, "
                     "or a row was changed in a way its 4-byte tag does not show");
            return false;
        }
        head_ = head;
        segment_.reset();
        return true;
    }

    // The row's tag is not the one its place in the segment recorded: changed, or another row
    // moved here — then its tag is recorded at another place nearby, where its content was.
    void break_at(const ReadRow& r, const store::RowDigest& digest) {
        const int64_t id = r.row.id;
        if (r.well_typed) {
            if (const auto from = recorded_place(store::row_tag(digest), id)) {
                // Each in the other's place, or only this one moved.
                const bool swapped = tag_of_row(*from) == segment_->tag_of(id);
                return fail(FindingKind::reordered_rows, id, r.row.timestamp,
                            swapped ? "rows " + std::to_string(id) + " and " + std::to_string(*from) +
                                          " are in each other's place (reordered)"
                                    : row_text(id) + " holds what eventd stored as " + row_text(*from) +
                                          " (rows moved)");
            }
        }
        fail(FindingKind::changed_row, id, r.row.timestamp,
             row_text(id) + " (" + std::string(r.row.event_type) + " of " + finding_time(r.row.timestamp) +
                 ") was changed after it was stored");
    }

    // Where, among the kReorderSearch rows after `id`, the chain recorded `tag`.
    std::optional<int64_t> recorded_place(const store::RowTag& tag, int64_t id) {
        auto search = store::detail::prepare(db_.get(), kSegmentsSql, file_);
        if (!search) return std::nullopt;
        sqlite3_bind_int64(search->get(), 1, id);
        while (sqlite3_step(search->get()) == SQLITE_ROW) {
            const Segment g = read_segment(search->get());
            if (!g.well_formed) return std::nullopt;
            for (int64_t other = std::max(g.first, id + 1); other <= g.last; ++other) {
                if (other > id + kReorderSearch) return std::nullopt;
                if (g.tag_of(other) == tag) return other;
            }
        }
        return std::nullopt;
    }

    // The tag of row `id` as it is now (nullopt: no such row).
    std::optional<store::RowTag> tag_of_row(int64_t id) {
        auto stmt = store::detail::prepare(
            db_.get(), ("SELECT " + store::event_select_list() + " FROM events WHERE id = ?1").c_str(), file_);
        if (!stmt) return std::nullopt;
        sqlite3_bind_int64(stmt->get(), 1, id);
        if (sqlite3_step(stmt->get()) != SQLITE_ROW) return std::nullopt;
        return store::row_tag(store::row_digest(read_row(stmt->get()).row));  // while the row's bytes are valid
    }

    // A collector's store holds its hosts' checkpoints as records (forwarded, FORWARD.md): rows
    // like any other. A checkpoint of this file names its file id.
    // Issue 39: only eventd writes checkpoints, as its own records (no origin class, no
    // sequence: base/reserved_types.hpp). A row of the type from anywhere else — an emitter
    // before the shim refused the namespace, a forged record forwarded by a host — is an
    // ordinary row, chained and checked like any, never an alarm and never an end of the check.
    bool own_checkpoint(const ReadRow& r) const {
        if (r.row.sequence || !base::has_product_origin(r.row.event_type, r.row.origin_class)) return false;
        if (!r.row.payload) return true;  // not a checkpoint at all: check_checkpoint says so
        const auto c = parse_checkpoint(*r.row.payload);
        return !c || c->file_id == file_id_;
    }

    // `before`: the head after the previous row, which the checkpoint must name.
    bool check_checkpoint(const ReadRow& r, const ChainHead& before) {
        const int64_t id = r.row.id;
        const uint64_t t = r.row.timestamp;
        const auto c = r.row.payload ? parse_checkpoint(*r.row.payload) : std::nullopt;
        if (!c) {
            fail(FindingKind::bad_checkpoint, id, t, row_text(id) + " is a synthetic.checkpoint that is not one");
            return false;
        }
        const std::string here = "the checkpoint at " + row_text(id) + " (" + finding_time(c->time_ns) + ")";
        if (c->last_row != id - 1 || c->time_ns != t) {
            fail(FindingKind::bad_checkpoint, id, t, here + " names another place in this file (moved or copied)");
            return false;
        }
        const ChainHead expected_previous = previous_ ? checkpoint_hash(*previous_) : ChainHead{};
        // Retention's anchor: the previous checkpoint it names was deleted with the prefix.
        const bool anchor = anchored_ && id == origin_id_ + 1;
        switch (check_signature(*c, options_.key)) {
            case SignatureCheck::bad_certificate:
                fail(FindingKind::bad_signature, id, t,
                     here + ": its epoch key is not certified by this verification key (forged, or another store's)");
                return false;
            case SignatureCheck::bad_signature:
                fail(FindingKind::bad_signature, id, t, here + ": its signature does not verify");
                return false;
            case SignatureCheck::valid:
                break;
        }
        // journald's CVE-2023-31439: a key of a later epoch must not seal earlier times.
        if (c->signed_by.epoch != c->schedule.epoch_at(c->time_ns) || c->time_ns > options_.now_ns + kFutureSlackNs) {
            fail(FindingKind::later_epoch, id, t,
                 here + " is signed with the key of epoch " + std::to_string(c->signed_by.epoch) + ", which begins " +
                     finding_time(c->schedule.epoch_start_ns(c->signed_by.epoch)) + " (a key from a later epoch)");
            return false;
        }
        if (c->head != before) {
            const int64_t from = report_.sealed_through + 1;
            fail(FindingKind::rechained_rows, from, 0,
                 "rows " + std::to_string(from) + ".." + std::to_string(id - 1) + " were changed, inserted or removed " +
                     "and the chain recomputed: " + here + " sealed another chain");
            return false;
        }
        if (c->previous != expected_previous && !anchor) {
            fail(FindingKind::broken_sequence, id, t,
                 here + " does not follow " +
                     (previous_ ? "the checkpoint at " + row_text(previous_->last_row + 1)
                                : std::string("the start of the chain")) +
                     " (checkpoints were removed or replaced)");
            return false;
        }
        if (previous_) {
            if (c->signed_by.epoch < previous_->signed_by.epoch || c->time_ns < previous_->time_ns) {
                fail(FindingKind::later_epoch, id, t, here + " is older than the checkpoint before it");
                return false;
            }
            // Forward security holds only if old rows were sealed while they were young: an
            // attacker with today's key can seal anything, but only as today's.
            const uint64_t allowed = 2ull * previous_->interval_s * 1'000'000'000u + kGapSlackNs;
            if (!previous_->final && c->time_ns - previous_->time_ns > allowed) {
                fail(FindingKind::sealing_gap, previous_->last_row + 2, t,
                     "no checkpoint between " + finding_time(previous_->time_ns) + " and " + finding_time(c->time_ns) +
                         " although eventd seals every " + std::to_string(previous_->interval_s) +
                         " s: rows " + std::to_string(previous_->last_row + 2) + ".." + std::to_string(id - 1) +
                         " were sealed late — checkpoints were removed and the rows resealed, or eventd crashed and "
                         "stayed down that long");
                return false;
            }
        }
        previous_ = c;
        ++report_.checkpoints;
        report_.sealed_through = id;
        first_unsealed_time_ = 0;
        return true;
    }

    fs::path file_;
    const VerifyOptions& options_;
    FileReport report_;
    store::detail::DbPtr db_;
    store::FileId file_id_{};
    int64_t origin_id_ = 0;
    bool anchored_ = false;  // the chain starts at a checkpoint retention kept
    int64_t max_id_issued_ = 0;
    ChainHead head_{};                // after the last segment checked
    store::detail::StmtPtr segments_stmt_;  // walk()'s cursor over chain_segments, in id order
    sqlite3_stmt* segments_ = nullptr;      // the same, as the SQLite calls take it
    std::optional<Segment> segment_;  // the segment the next row belongs to, once opened
    store::SegmentHasher hasher_;     // its link so far
    std::optional<Checkpoint> previous_;
    uint64_t first_unsealed_time_ = 0;
};

}  // namespace

std::string finding_time(uint64_t ns) {
    const time_t s = time_t(ns / 1'000'000'000u);
    tm t;
    gmtime_r(&s, &t);
    char out[32];
    std::strftime(out, sizeof out, "%Y-%m-%dT%H:%M:%SZ", &t);
    return out;
}

const char* kind_name(FindingKind kind) {
    switch (kind) {
        case FindingKind::changed_row: return "changed row";
        case FindingKind::missing_rows: return "missing rows";
        case FindingKind::inserted_row: return "inserted row";
        case FindingKind::reordered_rows: return "reordered rows";
        case FindingKind::rechained_rows: return "re-chained rows";
        case FindingKind::changed_segment: return "changed chain segment";
        case FindingKind::bad_checkpoint: return "bad checkpoint";
        case FindingKind::broken_sequence: return "broken checkpoint sequence";
        case FindingKind::bad_signature: return "bad signature";
        case FindingKind::later_epoch: return "checkpoint from a later epoch";
        case FindingKind::sealing_gap: return "sealing gap";
        case FindingKind::unsealed_rows: return "unsealed rows";
        case FindingKind::not_chained: return "not chained";
        case FindingKind::rolled_back: return "rolled back";
        case FindingKind::unreadable: return "unreadable";
    }
    return "?";
}

std::optional<FindingKind> kind_named(const std::string& name) {
    for (int k = 0; k <= int(FindingKind::unreadable); ++k)
        if (name == kind_name(FindingKind(k))) return FindingKind(k);
    return std::nullopt;
}

bool StoreReport::intact() const {
    for (const FileReport& f : files)
        if (f.broken) return false;
    return true;
}

bool StoreReport::fully_sealed() const {
    if (!intact()) return false;
    for (const FileReport& f : files)
        if (f.unsealed) return false;
    return true;
}

base::Result<StoreReport> verify_store(const fs::path& dir, const VerifyOptions& options) {
    auto files = store::event_files(dir);
    if (!files) return files.error();
    if (files->empty()) return base::Error{ENOENT, dir.string() + " holds no event store files (shard-*.db)"};
    StoreReport report;
    for (const fs::path& file : *files) report.files.push_back(FileVerifier(file, options).run());
    return report;
}

}  // namespace eventd::seal
