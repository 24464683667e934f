// Shard discovery and read-only connections for queries (PSD-008 §3.2.5, §8.6.4, §8.6.9).
#include "shard_catalog.hpp"

#include <algorithm>
#include <cerrno>
#include <system_error>

#include "msgpack_extract.hpp"
#include "sqlite_util.hpp"

namespace eventd::store {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kPrefix = "shard-";
constexpr std::string_view kSuffix = ".db";
constexpr int kCacheKiB = 1024;       // per connection; a query opens one per shard
constexpr int kProgressSteps = 1000;  // VM steps between deadline checks

bool all_digits(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// nullopt: not a shard file. Otherwise the active index (or nullopt inside for quarantined
// and other shard-*.db files).
std::optional<std::optional<uint32_t>> classify(std::string_view name) {
    if (name.size() <= kPrefix.size() + kSuffix.size() || name.substr(0, kPrefix.size()) != kPrefix ||
        name.substr(name.size() - kSuffix.size()) != kSuffix) {
        return std::nullopt;
    }
    const std::string_view middle = name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
    // shard-NNNN.db: the index zero-padded to 4 digits, more digits past 9999 (shard_file_name).
    if (all_digits(middle) && middle.size() >= 4 && middle.size() <= 10) {
        const uint64_t n = std::stoull(std::string(middle));
        if (n <= UINT32_MAX) return std::optional<uint32_t>(static_cast<uint32_t>(n));
    }
    // Quarantined (shard-NNNN.quarantined-<t>[-k].db) and any other shard-*.db: read, never
    // live (DESIGN.md §8: every shard file stays queryable).
    return std::optional<uint32_t>{};
}

}  // namespace

base::Result<std::vector<ShardFile>> list_shard_files(const fs::path& dir) {
    std::vector<ShardFile> files;
    std::error_code ec;
    fs::directory_iterator it(dir, ec);
    if (ec) return base::errno_error(ec.value(), "event store directory " + dir.string());
    for (fs::directory_iterator end; it != end; it.increment(ec)) {
        if (ec) break;
        const std::string name = it->path().filename().string();
        // eventd-meta.db, -wal/-shm side files and strangers do not match shard-*.db.
        auto kind = classify(name);
        if (!kind) continue;
        std::error_code type_ec;
        if (!it->is_regular_file(type_ec)) continue;
        files.push_back({it->path(), name, *kind});
    }
    if (ec) return base::errno_error(ec.value(), "reading event store directory " + dir.string());
    std::sort(files.begin(), files.end(), [](const ShardFile& a, const ShardFile& b) { return a.name < b.name; });
    return files;
}

namespace {

// What the progress handler reads; ReadConnection::State (private) is exactly this.
struct ConnectionState {
    detail::DbPtr db;
    fs::path path;
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
    const std::atomic<bool>* cancel = nullptr;
    bool timed_out = false;
    bool cancelled = false;
};

}  // namespace

struct ReadConnection::State : ConnectionState {};

namespace {

int on_progress(void* arg) {
    auto* s = static_cast<ConnectionState*>(arg);
    if (s->cancel && s->cancel->load(std::memory_order_relaxed)) {
        s->cancelled = true;
        s->timed_out = false;
        return 1;
    }
    if (std::chrono::steady_clock::now() > s->deadline) {
        s->timed_out = true;
        s->cancelled = false;
        return 1;
    }
    return 0;
}

// Open `file` with URI `query`; read the schema so a file that is not a shard, or that
// SQLite cannot read, fails here with its name rather than later inside a query.
base::Result<detail::DbPtr> open_ro(const fs::path& file, const char* query, int* failed_rc) {
    *failed_rc = SQLITE_OK;
    sqlite3* raw = nullptr;
    const std::string uri = detail::file_uri(file, query);
    const int rc =
        sqlite3_open_v2(uri.c_str(), &raw,
                        SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE, nullptr);
    detail::DbPtr db(raw);
    if (rc != SQLITE_OK) {
        *failed_rc = rc;
        return detail::sqlite_error(raw, rc, file, "open read-only");
    }
    sqlite3_busy_timeout(raw, detail::kShardBusyTimeoutMs);
    const std::string cache = "PRAGMA cache_size=-" + std::to_string(kCacheKiB);
    if (auto st = detail::exec(raw, cache.c_str(), file); !st) return st.error();

    sqlite3_stmt* probe_raw = nullptr;
    int prc = sqlite3_prepare_v2(raw, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='events'", -1,
                                 &probe_raw, nullptr);
    detail::StmtPtr probe(probe_raw);
    if (prc == SQLITE_OK) prc = sqlite3_step(probe_raw);
    if (prc != SQLITE_ROW) {
        *failed_rc = prc;
        return detail::sqlite_error(raw, prc, file, "reading the shard");
    }
    if (sqlite3_column_int(probe_raw, 0) != 1) {
        return base::Error{
            EIO, file.string() + ": not an event shard file (no event table); move it out of the store directory"};
    }
    return db;
}

}  // namespace

base::Result<ReadConnection> ReadConnection::open(const fs::path& file) {
    int rc = SQLITE_OK;
    auto db = open_ro(file, "mode=ro", &rc);
    // A WAL file needs its -shm; a reader that may not create one (read-only directory or
    // file system) can still read the file as immutable — it then misses what only the WAL
    // holds. Only for that failure: immutable on a file a writer is changing could misread.
    // Not when the process is out of descriptors: the immutable open could then take the one
    // descriptor left and read the file without its WAL — stale answers instead of an error.
    const bool shm_problem =
        ((rc & 0xff) == SQLITE_CANTOPEN || rc == SQLITE_READONLY_CANTINIT || rc == SQLITE_READONLY_DIRECTORY) &&
        (!db.ok() && db.error().code != base::ErrorCode::too_many_files);
    std::error_code ec;
    if (!db && shm_problem && fs::is_regular_file(file, ec)) {
        int fallback_rc = SQLITE_OK;
        auto fallback = open_ro(file, "immutable=1", &fallback_rc);
        if (fallback) db = std::move(fallback);
    }
    if (!db) return db.error();
    auto state = std::make_unique<State>();
    state->db = std::move(*db);
    state->path = file;
    if (auto st = register_msgpack_extract(state->db.get()); !st) {
        return base::Error{st.error().code, file.string() + ": " + st.error().message};
    }
    return ReadConnection(std::move(state));
}

ReadConnection::ReadConnection(std::unique_ptr<State> state) : state_(std::move(state)) {}
ReadConnection::ReadConnection(ReadConnection&&) noexcept = default;
ReadConnection& ReadConnection::operator=(ReadConnection&&) noexcept = default;
ReadConnection::~ReadConnection() = default;

sqlite3* ReadConnection::get() const { return state_ ? state_->db.get() : nullptr; }
const fs::path& ReadConnection::path() const { return state_->path; }

void ReadConnection::set_deadline(std::chrono::steady_clock::time_point deadline, const std::atomic<bool>* cancel) {
    state_->deadline = deadline;
    state_->cancel = cancel;
    state_->timed_out = false;
    state_->cancelled = false;
    sqlite3_progress_handler(state_->db.get(), kProgressSteps, on_progress,
                             static_cast<ConnectionState*>(state_.get()));
}

bool ReadConnection::timed_out() const { return state_->timed_out; }
bool ReadConnection::cancelled() const { return state_->cancelled; }

}  // namespace eventd::store
