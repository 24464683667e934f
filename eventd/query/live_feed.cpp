// A stream's live reads (PSD-008 §8.7); see live_feed.hpp.
//
// Per call, in one read transaction on the shard: hi = max(id), then the rows with
// watermark < id <= hi that pass the filters, in id order, 1000 per statement run; then the
// watermark becomes hi. Rows the filters reject are therefore never examined twice, however
// selective the stream is. Ids only grow within a shard file and are never reused (the writer
// numbers rows itself, store/shard_db.hpp), so hi at or below the watermark means nothing new
// — also when retention emptied the file. A file replaced under the shard's name (quarantine
// and a fresh shard: a new inode) is a new file id with a watermark of its own.
#include "eventd/query/live_feed.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <optional>

#include "eventd/query/planner.hpp"
#include "store/shard_db.hpp"

namespace eventd::query {
namespace {

namespace fs = std::filesystem;
using store::RowCursor;
using store::ShardSnapshot;

std::optional<ino_t> inode_of(const fs::path& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return std::nullopt;
    return st.st_ino;
}

}  // namespace

base::Status read_after(RowCursor& rows, const store::FileId& file, int64_t& watermark, int64_t hi,
                        RowEncoder& encoder, const PositionedSink& sink) {
    if (hi <= watermark) return {};
    const int id_column = store::index_of(store::EventColumn::id);
    int64_t from = watermark;
    for (;;) {
        rows.set_id_range(from, hi);
        int n = 0;
        for (;;) {
            auto has = rows.next();
            if (!has) {
                watermark = from;
                return has.error();
            }
            if (!*has) break;
            ++n;
            const store::RowView row = rows.row();
            from = row.integer(id_column);
            if (auto st = sink(encoder.encode(row), StoredAt{file, from}); !st) {
                watermark = from;  // what was handed over stays handed over
                return st;
            }
        }
        if (n < store::kLiveBatchRows) break;
    }
    watermark = hi;
    return {};
}

struct LiveFeed::Impl {
    struct Connection {
        ShardSnapshot snapshot;
        RowCursor rows;
        ino_t inode = 0;
        store::FileId file{};
    };

    Query query;
    fs::path dir;
    store::StorePosition position;
    // eventd_visible calls through this slot; heap-allocated so moving the feed keeps it.
    std::unique_ptr<access::CallerAccess*> slot = std::make_unique<access::CallerAccess*>(nullptr);
    std::optional<Plan> plan;
    bool restricted = false;
    std::map<uint32_t, Connection> connections;

    base::Status ensure_plan(bool want_restricted) {
        if (plan && restricted == want_restricted) return {};
        auto p = plan_live(query, want_restricted);
        if (!p) return p.error();
        plan = std::move(*p);
        restricted = want_restricted;
        connections.clear();  // statements were prepared for the other plan
        return {};
    }

    // The open snapshot for shard `index`, (re)opened when missing or the file was replaced.
    // nullptr without error: the shard file does not exist (nothing committed there yet).
    base::Result<Connection*> connection(uint32_t index) {
        const std::string name = store::shard_file_name(index);
        const fs::path path = dir / name;
        const auto inode = inode_of(path);
        if (!inode) {
            connections.erase(index);
            return static_cast<Connection*>(nullptr);
        }
        auto it = connections.find(index);
        if (it != connections.end() && it->second.inode == *inode) return &it->second;
        if (it != connections.end()) connections.erase(it);
        store::ReadOptions options;
        options.visible = [slot = slot.get()](const store::RowSubject& row) {
            return *slot && (*slot)->visible(row.event_type, row.effective_token, row.true_token);
        };
        auto snapshot = ShardSnapshot::open(store::ShardFile{path, name, index}, std::move(options));
        if (!snapshot) return snapshot.error();
        auto file = snapshot->file_id();
        if (!file) return file.error();
        auto rows = snapshot->run(plan->read);
        if (!rows) return rows.error();
        auto [pos, inserted] =
            connections.emplace(index, Connection{std::move(*snapshot), std::move(*rows), *inode, *file});
        (void)inserted;
        return &pos->second;
    }
};

LiveFeed::LiveFeed(const Query& q, std::filesystem::path store_dir, store::StorePosition start)
    : impl_(std::make_unique<Impl>()) {
    impl_->query = q;
    impl_->dir = std::move(store_dir);
    impl_->position = std::move(start);
}

LiveFeed::~LiveFeed() = default;
LiveFeed::LiveFeed(LiveFeed&&) noexcept = default;
LiveFeed& LiveFeed::operator=(LiveFeed&&) noexcept = default;

const store::StorePosition& LiveFeed::position() const { return impl_->position; }

base::Status LiveFeed::read_new(uint32_t shard_index, access::CallerAccess& access, const PositionedSink& sink) {
    Impl& m = *impl_;
    const bool restricted = access.filters_rows();
    if (auto st = m.ensure_plan(restricted); !st) return st;
    *m.slot = &access;
    auto found = m.connection(shard_index);
    if (!found) return found.error();
    Impl::Connection* c = *found;
    if (!c) return {};

    if (auto st = c->snapshot.begin(); !st) return st;
    // Ends the read transaction however we leave (the cursor is reset with it).
    struct EndSnapshot {
        ShardSnapshot& s;
        ~EndSnapshot() { s.end(); }
    } end{c->snapshot};

    RowEncoder encoder(m.query.select, access);
    const auto known = m.position.last_id.find(c->file);
    int64_t watermark = known == m.position.last_id.end() ? 0 : known->second;  // 0: new to this stream
    base::Status st = read_after(c->rows, c->file, watermark, c->snapshot.watermark(), encoder, sink);
    if (st) {
        // Past ids issued and already deleted (none are stored above max(id) in this snapshot):
        // a cursor must not count them as lost.
        auto issued = c->snapshot.max_id_issued();
        if (!issued) return issued.error();
        watermark = std::max(watermark, *issued);
    }
    if (watermark > 0) m.position.last_id[c->file] = watermark;
    return st;
}

}  // namespace eventd::query
