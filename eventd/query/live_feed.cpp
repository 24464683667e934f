// A stream's live reads (PSD-008 §8.7); see live_feed.hpp.
//
// Per call, in one read transaction on the shard: hi = max(id), then the rows with
// watermark < id <= hi that pass the filters, in id order, 1000 per statement run; then the
// watermark becomes hi. Rows the filters reject are therefore never examined twice, however
// selective the stream is. Ids only grow within a shard file, except when every row above
// the watermark has gone (retention emptied the shard) or the file was replaced (quarantine
// and a fresh shard): max(id) below the watermark, or a new inode, restarts it at 0.
#include "eventd/query/live_feed.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <map>
#include <optional>

#include "eventd/query/planner.hpp"
#include "eventd/query/row_encoder.hpp"
#include "store/shard_catalog.hpp"
#include "store/shard_db.hpp"
#include "store/sqlite_util.hpp"

namespace eventd::query {
namespace {

namespace fs = std::filesystem;
using kmes::Error;
using store::ReadConnection;
using store::detail::StmtPtr;

std::optional<ino_t> inode_of(const fs::path& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return std::nullopt;
    return st.st_ino;
}

}  // namespace

struct LiveFeed::Impl {
    struct Connection {
        ReadConnection conn;
        StmtPtr max_id;
        StmtPtr rows;
        ino_t inode = 0;
    };

    Query query;
    fs::path dir;
    std::map<uint32_t, int64_t> last_id;
    // eventd_visible calls through this slot; heap-allocated so moving the feed keeps it.
    std::unique_ptr<access::CallerAccess*> slot = std::make_unique<access::CallerAccess*>(nullptr);
    std::optional<Plan> plan;
    bool restricted = false;
    std::map<uint32_t, Connection> connections;

    kmes::Status ensure_plan(bool want_restricted) {
        if (plan && restricted == want_restricted) return {};
        auto p = plan_live(query, want_restricted);
        if (!p) return p.error();
        plan = std::move(*p);
        restricted = want_restricted;
        connections.clear();  // statements were prepared for the other plan
        return {};
    }

    // The open connection for shard `index`, (re)opened when missing or the file was replaced.
    // nullptr without error: the shard file does not exist (nothing committed there yet).
    kmes::Result<Connection*> connection(uint32_t index) {
        const fs::path path = dir / store::shard_file_name(index);
        const auto inode = inode_of(path);
        if (!inode) {
            connections.erase(index);
            return static_cast<Connection*>(nullptr);
        }
        auto it = connections.find(index);
        if (it != connections.end() && it->second.inode == *inode) return &it->second;
        if (it != connections.end()) {
            connections.erase(it);
            last_id[index] = 0;  // a new file under the same name: its ids start afresh
        }
        auto conn = ReadConnection::open(path);
        if (!conn) return conn.error();
        sqlite3* db = conn->get();
        if (auto st = register_visibility(db, slot.get()); !st) return st.error();
        sqlite3_stmt* raw = nullptr;
        int rc = sqlite3_prepare_v2(db, "SELECT max(id) FROM events", -1, &raw, nullptr);
        StmtPtr max_id(raw);
        if (rc != SQLITE_OK) return Error{EIO, "cannot read event store file " + path.filename().string() + ": " + sqlite3_errstr(rc)};
        raw = nullptr;
        rc = sqlite3_prepare_v2(db, plan->sql.c_str(), static_cast<int>(plan->sql.size()), &raw, nullptr);
        StmtPtr rows(raw);
        if (rc != SQLITE_OK) return Error{EIO, "cannot query event store file " + path.filename().string() + ": " + sqlite3_errstr(rc)};
        bind_params(raw, plan->params);
        auto [pos, inserted] = connections.emplace(index, Connection{std::move(*conn), std::move(max_id), std::move(rows), *inode});
        (void)inserted;
        return &pos->second;
    }
};

LiveFeed::LiveFeed(const Query& q, std::filesystem::path store_dir, StreamStart start) : impl_(std::make_unique<Impl>()) {
    impl_->query = q;
    impl_->dir = std::move(store_dir);
    impl_->last_id = std::move(start.last_id);
}

LiveFeed::~LiveFeed() = default;
LiveFeed::LiveFeed(LiveFeed&&) noexcept = default;
LiveFeed& LiveFeed::operator=(LiveFeed&&) noexcept = default;

kmes::Status LiveFeed::read_new(uint32_t shard_index, access::CallerAccess& access, const RecordSink& sink) {
    Impl& m = *impl_;
    const bool restricted = !access.unrestricted();
    if (auto st = m.ensure_plan(restricted); !st) return st;
    *m.slot = &access;
    auto found = m.connection(shard_index);
    if (!found) return found.error();
    Impl::Connection* c = *found;
    if (!c) return {};
    sqlite3* db = c->conn.get();
    const std::string name = store::shard_file_name(shard_index);
    auto fail = [&](int rc) { return Error{EIO, "cannot read event store file " + name + ": " + sqlite3_errstr(rc)}; };

    int rc = sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) return fail(rc);
    // Ends the read transaction however we leave (statements reset first).
    struct EndTransaction {
        Impl::Connection* c;
        ~EndTransaction() {
            sqlite3_reset(c->max_id.get());
            sqlite3_reset(c->rows.get());
            sqlite3_exec(c->conn.get(), "COMMIT", nullptr, nullptr, nullptr);
        }
    } end{c};

    rc = sqlite3_step(c->max_id.get());
    if (rc != SQLITE_ROW) return fail(rc);
    const int64_t hi = sqlite3_column_int64(c->max_id.get(), 0);
    sqlite3_reset(c->max_id.get());
    int64_t& watermark = m.last_id[shard_index];
    if (hi < watermark) watermark = 0;  // rows above the watermark are gone: ids restart
    if (hi == watermark) return {};

    sqlite3_stmt* rows = c->rows.get();
    RowEncoder encoder(m.query.select, access);
    int64_t from = watermark;
    for (;;) {
        sqlite3_reset(rows);
        sqlite3_bind_int64(rows, 1, from);
        sqlite3_bind_int64(rows, 2, hi);
        int n = 0;
        while ((rc = sqlite3_step(rows)) == SQLITE_ROW) {
            ++n;
            from = sqlite3_column_int64(rows, kIdColumn);
            if (auto st = sink(encoder.encode(rows)); !st) {
                watermark = from;  // what was handed over stays handed over
                return st;
            }
        }
        if (rc != SQLITE_DONE) {
            watermark = from;
            return fail(rc);
        }
        if (n < kLiveBatchRows) break;
    }
    watermark = hi;
    return {};
}

}  // namespace eventd::query
