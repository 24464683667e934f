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
#include "store/shard_db.hpp"
#include "store/shard_snapshot.hpp"

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

struct LiveFeed::Impl {
    struct Connection {
        ShardSnapshot snapshot;
        RowCursor rows;
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

    // The open snapshot for shard `index`, (re)opened when missing or the file was replaced.
    // nullptr without error: the shard file does not exist (nothing committed there yet).
    kmes::Result<Connection*> connection(uint32_t index) {
        const std::string name = store::shard_file_name(index);
        const fs::path path = dir / name;
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
        store::ReadOptions options;
        options.visible = [slot = slot.get()](std::string_view type) { return *slot && (*slot)->visible(type); };
        auto snapshot = ShardSnapshot::open(store::ShardFile{path, name, index}, std::move(options));
        if (!snapshot) return snapshot.error();
        auto rows = snapshot->run(plan->read);
        if (!rows) return rows.error();
        auto [pos, inserted] = connections.emplace(index, Connection{std::move(*snapshot), std::move(*rows), *inode});
        (void)inserted;
        return &pos->second;
    }
};

LiveFeed::LiveFeed(const Query& q, std::filesystem::path store_dir, StreamStart start)
    : impl_(std::make_unique<Impl>()) {
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

    if (auto st = c->snapshot.begin(); !st) return st;
    // Ends the read transaction however we leave (the cursor is reset with it).
    struct EndSnapshot {
        ShardSnapshot& s;
        ~EndSnapshot() { s.end(); }
    } end{c->snapshot};

    const int64_t hi = c->snapshot.watermark();
    int64_t& watermark = m.last_id[shard_index];
    if (hi < watermark) watermark = 0;  // rows above the watermark are gone: ids restart
    if (hi == watermark) return {};

    RowEncoder encoder(m.query.select, access);
    const int id_column = store::index_of(store::EventColumn::id);
    int64_t from = watermark;
    for (;;) {
        c->rows.set_id_range(from, hi);
        int n = 0;
        for (;;) {
            auto has = c->rows.next();
            if (!has) {
                watermark = from;
                return has.error();
            }
            if (!*has) break;
            ++n;
            const store::RowView row = c->rows.row();
            from = row.integer(id_column);
            if (auto st = sink(encoder.encode(row)); !st) {
                watermark = from;  // what was handed over stays handed over
                return st;
            }
        }
        if (n < store::kLiveBatchRows) break;
    }
    watermark = hi;
    return {};
}

}  // namespace eventd::query
