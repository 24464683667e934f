#include "seal/compare_copies.hpp"

#include <sqlite3.h>

#include <map>
#include <optional>

#include "base/hex.hpp"
#include "store/row_chain.hpp"
#include "store/schema.hpp"
#include "store/shard_db.hpp"
#include "store/sqlite_util.hpp"

namespace eventd::seal {
namespace fs = std::filesystem;
namespace {


// One file of the store, read-only: its id, where its chain starts, and a row's payload.
struct HostFile {
    fs::path path;
    store::detail::DbPtr db;
    int64_t origin_id = 0;
    int64_t last_id = 0;
};

base::Result<std::map<store::FileId, HostFile>> host_files(const fs::path& dir) {
    auto files = store::event_files(dir);
    if (!files) return files.error();
    std::map<store::FileId, HostFile> out;
    for (const fs::path& path : *files) {
        sqlite3* raw = nullptr;
        const std::string uri = store::detail::file_uri(path, "mode=ro");
        if (sqlite3_open_v2(uri.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr) != SQLITE_OK) {
            sqlite3_close_v2(raw);
            continue;  // unreadable: verify_store reports it
        }
        HostFile f{path, store::detail::DbPtr(raw)};
        sqlite3_busy_timeout(raw, 5000);
        auto id = store::detail::read_file_id(raw, path);
        if (!id || !*id) continue;
        auto origin = store::detail::read_metadata(raw, "chain_origin", path);
        if (origin && *origin) {
            if (const auto point = store::parse_chain_point(**origin)) f.origin_id = point->id;
        }
        auto last = store::detail::prepare(raw, "SELECT coalesce(max(id), 0) FROM events", path);
        if (last && sqlite3_step(last->get()) == SQLITE_ROW) f.last_id = sqlite3_column_int64(last->get(), 0);
        out.emplace(**id, std::move(f));
    }
    return out;
}

std::optional<Checkpoint> checkpoint_at(HostFile& f, int64_t row) {
    auto stmt = store::detail::prepare(
        f.db.get(),
        "SELECT event_type, payload FROM events WHERE id = ?1 AND origin_class IS NULL AND sequence IS NULL", f.path);
    if (!stmt) return std::nullopt;
    sqlite3_bind_int64(stmt->get(), 1, row);
    if (sqlite3_step(stmt->get()) != SQLITE_ROW) return std::nullopt;
    const auto* type = reinterpret_cast<const char*>(sqlite3_column_text(stmt->get(), 0));
    if (!type || std::string_view(type) != kCheckpointType) return std::nullopt;
    const auto* p = static_cast<const uint8_t*>(sqlite3_column_blob(stmt->get(), 1));
    return parse_checkpoint(std::span<const uint8_t>(p, size_t(sqlite3_column_bytes(stmt->get(), 1))));
}

}  // namespace

base::Result<CopyComparison> compare_with_forwarded(const fs::path& dir, const std::vector<Checkpoint>& forwarded,
                                                    const PublicKey& key) {
    CopyComparison out;
    // The newest checkpoint per file that verifies with this store's key — which also makes it
    // this store's: one forged at the collector, or another host's, accuses nobody.
    std::map<store::FileId, const Checkpoint*> newest;
    for (const Checkpoint& c : forwarded) {
        if (check_signature(c, key) != SignatureCheck::valid) {
            ++out.other_key;
            continue;
        }
        ++out.forwarded;
        auto& slot = newest[c.file_id];
        if (!slot || c.last_row > slot->last_row) slot = &c;
    }
    auto files = host_files(dir);
    if (!files) return files.error();
    for (const auto& [file_id, c] : newest) {
        const int64_t row = c->last_row + 1;
        const std::string sealed = "the checkpoint at row " + std::to_string(row) + " of shard " +
                                   std::to_string(c->shard) + " sealed " + finding_time(c->time_ns);
        const auto it = files->find(file_id);
        if (it == files->end()) {
            out.findings.push_back({FindingKind::rolled_back, "file " + base::hex_text(file_id), row, c->time_ns,
                                    "the collector holds " + sealed + " of a file this store no longer has (file id " +
                                        base::hex_text(file_id) + "): removed, or replaced by another copy"});
            continue;
        }
        ++out.files;
        HostFile& f = it->second;
        const std::string name = f.path.filename().string();
        if (f.origin_id >= row) continue;  // retention deleted it since: nothing to compare
        const auto here = checkpoint_at(f, row);
        if (!here) {
            out.findings.push_back(
                {FindingKind::rolled_back, name, row, c->time_ns,
                 "the collector holds " + sealed + ", which this file does not have (it ends at row " +
                     std::to_string(f.last_id) + "): rolled back to an older copy or truncated"});
        } else if (here->head != c->head || here->signed_by.signature != c->signed_by.signature) {
            out.findings.push_back({FindingKind::rolled_back, name, row, c->time_ns,
                                    "row " + std::to_string(row) + " is not " + sealed +
                                        " as the collector holds it: the file was replaced by another copy"});
        }
    }
    return out;
}

}  // namespace eventd::seal
