// eventd-meta.db: the adaptive-indexing state beside the shards in EventStorePath
// (PSD-008 §3.3.9), independent of them (it survives resharding; shard discovery skips it,
// store/shard_files.cpp). Only the policy thread (policy_thread.hpp) opens and writes it after
// startup. WAL, synchronous=NORMAL (low volume); created with mode 0600, owned by eventd's
// effective user.
//
//   table            column         type      meaning
//   ───────────────  ─────────────  ────────  ─────────────────────────────────────────────
//   index_counters   field_path     TEXT PK   header column or payload path ("source.name")
//                    query_count    INTEGER   queries within the field's current window
//                    window_start   INTEGER   start of that window, ns since the epoch
//   desired_indexes  field_path     TEXT PK   a member of the desired set
//                    priority       INTEGER   0 = most important (lower = higher)
//                    is_expression  INTEGER   1 payload path (expression index), 0 column
//   meta             key            TEXT PK   schema_version = "1"
//                    value          TEXT      created_at = ISO 8601 UTC ("2026-11-25T04:08:29Z")
//                                             admin_sd = JSON array of principals who may
//                                             run EVENTS INDEX (admin_sd.hpp), default
//                                             ["group:adm"]; root always may
//
// Startup (§3.3.9): open or create; a file SQLite cannot read, that fails its quick_check or
// carries another schema_version is logged and set aside as eventd-meta.db.corrupt-<ns> (with
// its -wal and -shm as eventd-meta.db.corrupt-<ns>-wal/-shm), and a new one is created — the
// adaptive state is lost, ingestion is not affected.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "eventd/index/desired_set.hpp"
#include "eventd/index/policy.hpp"
#include "store/sqlite_util.hpp"

namespace eventd::index {

inline constexpr const char* kMetaDbName = "eventd-meta.db";
inline constexpr int kMetaSchemaVersion = 1;  // §13.1
inline constexpr const char* kDefaultAdminSd = R"(["group:adm"])";

struct MetaContents {
    std::map<std::string, FieldWindow> counters;
    std::vector<DesiredIndex> desired;    // priority order
    std::optional<std::string> admin_sd;  // the meta row as stored; nullopt when the row is missing
    std::string created_at;
};

class MetaDb {
public:
    struct Opened;
    // Open <store_dir>/eventd-meta.db, recreating an unusable one (see the top of the file).
    // `now_ns` names a set-aside file and fills created_at. Errors: no usable file could be
    // created (the directory is not writable, the disk is full).
    static base::Result<Opened> open(const std::filesystem::path& store_dir, int64_t now_ns);

    base::Result<MetaContents> load();
    // Replace both tables in one transaction.
    base::Status save(const std::map<std::string, FieldWindow>& counters, const std::vector<DesiredIndex>& desired);
    // The admin_sd row as stored now (an operator may have changed it with sqlite3); nullopt
    // when missing.
    base::Result<std::optional<std::string>> read_admin_sd();
    const std::filesystem::path& path() const { return path_; }
    // A PRAGMA's value on this connection (tests check synchronous=NORMAL, which only the
    // connection knows).
    base::Result<int64_t> pragma(const char* name);

private:
    MetaDb(store::detail::DbPtr db, std::filesystem::path path) : db_(std::move(db)), path_(std::move(path)) {}
    static base::Result<MetaDb> connect(const std::filesystem::path& path);
    static base::Result<Opened> open_existing(const std::filesystem::path& path);
    static base::Result<Opened> create(const std::filesystem::path& path, int64_t now_ns);

    store::detail::DbPtr db_;
    std::filesystem::path path_;
};

struct MetaDb::Opened {
    MetaDb db;
    MetaContents contents;
    std::optional<std::string> set_aside_as;  // the name an unusable file was given
};

// eventd-meta.db.corrupt-<ns> (the name the file at `path` gets when set aside).
std::string corrupt_name(int64_t now_ns);

}  // namespace eventd::index
