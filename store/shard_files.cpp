// Whole-file operations on the store directory: quarantining a shard (DESIGN.md §8) and
// reading the union of every shard's sequence_state at startup (DESIGN.md §4.3).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <system_error>

#include "base/durable_file.hpp"
#include "schema.hpp"
#include "shard_db.hpp"
#include "sqlite_util.hpp"

namespace eventd::store {

namespace fs = std::filesystem;

namespace {

fs::path with_suffix(const fs::path& path, const char* suffix) {
    fs::path p = path;
    p += suffix;
    return p;
}

// Read sequence_state from one file over a read-only connection. nullopt: the file has no
// such table (not a shard of ours). Error: it could not be read.
Result<std::optional<SequenceState>> read_state_file(const fs::path& file, const char* uri_query) {
    sqlite3* raw = nullptr;
    const std::string uri = detail::file_uri(file, uri_query);
    const int rc =
        sqlite3_open_v2(uri.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_EXRESCODE, nullptr);
    detail::DbPtr db(raw);
    if (rc != SQLITE_OK) return detail::sqlite_error(raw, rc, file, "open read-only");
    sqlite3_busy_timeout(raw, 5000);
    auto present = detail::has_table(raw, "sequence_state", file);
    if (!present) return present.error();
    if (!*present) return std::optional<SequenceState>{};
    auto state = detail::read_sequence_state(raw, file);
    if (!state) return state.error();
    return std::optional<SequenceState>{std::move(*state)};
}

}  // namespace

Result<std::string> quarantine_shard(const fs::path& dir, uint32_t index) {
    const fs::path path = dir / shard_file_name(index);
    char prefix[40];
    std::snprintf(prefix, sizeof prefix, "shard-%04u.quarantined-%lld", index,
                  static_cast<long long>(std::time(nullptr)));
    std::error_code ec;
    auto taken = [&](const std::string& name) {
        return fs::exists(dir / name, ec) || fs::exists(dir / (name + "-wal"), ec) ||
               fs::exists(dir / (name + "-shm"), ec);
    };
    std::string name = std::string(prefix) + ".db";
    for (int n = 2; taken(name); ++n) name = std::string(prefix) + "-" + std::to_string(n) + ".db";
    const fs::path target = dir / name;

    // Side files first: a crash between the renames then leaves the -wal under the quarantine
    // name rather than beside the shard-NNNN.db name, where the next fresh shard would meet it.
    for (const char* suffix : {"-wal", "-shm"}) {
        const fs::path from = with_suffix(path, suffix);
        if (!fs::exists(from, ec)) continue;
        fs::rename(from, with_suffix(target, suffix), ec);
        if (ec) return base::errno_error(ec.value(), "quarantine: rename " + from.string());
    }
    fs::rename(path, target, ec);
    if (ec) return base::errno_error(ec.value(), "quarantine: rename " + path.string() + " to " + name);
    if (auto s = base::sync_directory(dir); !s) return s.error();
    return name;
}

Result<std::vector<fs::path>> event_files(const fs::path& dir) {
    std::error_code ec;
    std::vector<fs::path> files;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const fs::path& p = it->path();
        // DESIGN.md §8: every .db of the store (active, historical, quarantined), not eventd-meta.db.
        if (p.extension() != ".db" || p.filename() == "eventd-meta.db") continue;
        if (!it->is_regular_file(ec)) continue;
        files.push_back(p);
    }
    if (ec) return base::errno_error(ec.value(), "list " + dir.string());
    std::sort(files.begin(), files.end());
    return files;
}

SequenceState load_sequence_state(const fs::path& dir, std::vector<std::string>* unreadable) {
    SequenceState all;
    auto listed = event_files(dir);
    if (!listed && unreadable) unreadable->push_back(dir.string());
    const std::vector<fs::path> files = listed ? std::move(*listed) : std::vector<fs::path>{};

    for (const fs::path& file : files) {
        // A read-only WAL reader needs the -shm; when it cannot have one, read the file as
        // immutable (it then misses what only the WAL holds — better than nothing).
        auto state = read_state_file(file, "mode=ro");
        if (!state) state = read_state_file(file, "immutable=1");
        if (!state) {
            if (unreadable) unreadable->push_back(file.filename().string());
            continue;
        }
        if (!state->has_value()) continue;  // no sequence_state: not one of our shards
        for (const auto& [key, ranges] : **state) all[key].add(ranges);
    }
    return all;
}

}  // namespace eventd::store
