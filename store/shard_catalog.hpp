// The read side's view of the store directory (PSD-008 §3.2.5, §8.6.4): which files a query
// fans out over, and a read-only connection to one of them.
#pragma once

#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.hpp"

namespace eventd::store {

struct ShardFile {
    std::filesystem::path path;
    std::string name;                      // file name, e.g. "shard-0001.db"
    std::optional<uint32_t> active_index;  // N for `shard-NNNN.db`; nullopt for quarantined files
};

// Every shard file of the store, sorted by name: `shard-NNNN.db` (active or historical: a
// higher-numbered file left from a larger earlier shard count) and
// `shard-NNNN.quarantined-<t>[-k].db`. Skipped: eventd-meta.db, `-wal`/`-shm` side files,
// anything not named shard-*.db, directories. A missing or unreadable directory → Error.
base::Result<std::vector<ShardFile>> list_shard_files(const std::filesystem::path& dir);

// One read-only connection (file:…?mode=ro, never blocks a writer) with msgpack_extract
// registered, a busy timeout and a small page cache. Movable, not copyable.
class ReadConnection {
public:
    // Error naming the file when it cannot be opened read-only.
    static base::Result<ReadConnection> open(const std::filesystem::path& file);

    ReadConnection(ReadConnection&&) noexcept;
    ReadConnection& operator=(ReadConnection&&) noexcept;
    ~ReadConnection();

    sqlite3* get() const;
    const std::filesystem::path& path() const;

    // Progress handler (every ~1000 VM steps): interrupt the running statement when
    // steady_clock::now() > deadline or *cancel is true (cancel may be null). The statement
    // then fails with SQLITE_INTERRUPT; timed_out() tells which of the two fired.
    void set_deadline(std::chrono::steady_clock::time_point deadline, const std::atomic<bool>* cancel);
    bool timed_out() const;  // the last interrupt came from the deadline
    bool cancelled() const;  // the last interrupt came from the cancel flag

private:
    struct State;
    explicit ReadConnection(std::unique_ptr<State> state);
    std::unique_ptr<State> state_;
};

}  // namespace eventd::store
