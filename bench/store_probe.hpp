// Looking at an eventd store from outside, as a query would: every shard-*.db of the store
// directory over read-only SQLite connections (WAL lets them read beside the writers).
//
//   StoreWatch    while eventd runs: rows committed so far (max(id) per shard — the rowid is
//                 the INTEGER PRIMARY KEY and nothing is deleted in a benchmark, so max(id) is
//                 the row count without a table scan), and the KMES rows that became visible
//                 since the last look (for emit-to-commit latency)
//   StoreSummary  after eventd stopped: per-CPU events, gap records and the accounting check of
//                 DESIGN.md §3.1 (events + lost == highest sequence)
#pragma once

#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace bench {

inline std::vector<std::filesystem::path> shard_files(const std::string& store) {
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(store)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind("shard-", 0) == 0 && entry.path().extension() == ".db") files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    return files;
}

class ReadOnlyDb {
public:
    explicit ReadOnlyDb(const std::filesystem::path& file) {
        const std::string uri = "file:" + file.string() + "?mode=ro";
        if (sqlite3_open_v2(uri.c_str(), &db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr) != SQLITE_OK)
            throw std::runtime_error("cannot open " + file.string() + " read-only: " + sqlite3_errmsg(db_));
        sqlite3_busy_timeout(db_, 5000);
    }
    ~ReadOnlyDb() {
        for (auto& [sql, stmt] : statements_) sqlite3_finalize(stmt);
        sqlite3_close_v2(db_);
    }
    ReadOnlyDb(const ReadOnlyDb&) = delete;
    ReadOnlyDb& operator=(const ReadOnlyDb&) = delete;

    // A cached prepared statement, reset and ready to bind.
    sqlite3_stmt* statement(const std::string& sql) {
        auto it = statements_.find(sql);
        if (it == statements_.end()) {
            sqlite3_stmt* stmt = nullptr;
            if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK)
                throw std::runtime_error("prepare '" + sql + "': " + sqlite3_errmsg(db_));
            it = statements_.emplace(sql, stmt).first;
        }
        sqlite3_reset(it->second);
        sqlite3_clear_bindings(it->second);
        return it->second;
    }

private:
    sqlite3* db_ = nullptr;
    std::map<std::string, sqlite3_stmt*> statements_;
};

class StoreWatch {
public:
    explicit StoreWatch(const std::string& store) {
        for (const auto& file : shard_files(store)) {
            shards_.push_back(std::make_unique<ReadOnlyDb>(file));
            last_id_.push_back(0);
        }
        if (shards_.empty()) throw std::runtime_error("no shard files in " + store);
    }

    size_t shard_count() const { return shards_.size(); }

    // Rows committed so far in all shards (KMES and synthetic).
    uint64_t rows() {
        uint64_t total = 0;
        for (auto& db : shards_) {
            sqlite3_stmt* stmt = db->statement("SELECT max(id) FROM events");
            if (sqlite3_step(stmt) == SQLITE_ROW) total += uint64_t(sqlite3_column_int64(stmt, 0));
        }
        return total;
    }

    // Emit timestamps (ns, CLOCK_REALTIME, stamped by the shim) of the KMES rows committed
    // since the previous call.
    void new_event_timestamps(std::vector<uint64_t>& out) {
        for (size_t i = 0; i < shards_.size(); ++i) {
            sqlite3_stmt* stmt =
                shards_[i]->statement("SELECT id, timestamp FROM events WHERE id > ?1 AND sequence IS NOT NULL");
            sqlite3_bind_int64(stmt, 1, int64_t(last_id_[i]));
            while (sqlite3_step(stmt) == SQLITE_ROW) {
                last_id_[i] = std::max<uint64_t>(last_id_[i], uint64_t(sqlite3_column_int64(stmt, 0)));
                out.push_back(uint64_t(sqlite3_column_int64(stmt, 1)));
            }
        }
    }

private:
    std::vector<std::unique_ptr<ReadOnlyDb>> shards_;
    std::vector<uint64_t> last_id_;
};

struct CpuSummary {
    uint64_t events = 0;        // KMES rows
    uint64_t max_sequence = 0;  // highest stored sequence
    uint64_t gap_records = 0;
    uint64_t lost = 0;         // sum of the gap records' count
    uint64_t max_gap_end = 0;  // highest last_sequence of a gap
    // DESIGN.md §3.1: everything up to the highest accounted sequence is either stored or
    // recorded as lost, exactly once.
    bool accounted() const { return events + lost == std::max(max_sequence, max_gap_end); }
};

struct StoreSummary {
    std::map<uint16_t, CpuSummary> cpus;
    uint64_t startup_records = 0, shutdown_records = 0, storage_errors = 0;

    uint64_t events() const {
        uint64_t n = 0;
        for (const auto& [cpu, s] : cpus) n += s.events;
        return n;
    }
    uint64_t gap_records() const {
        uint64_t n = 0;
        for (const auto& [cpu, s] : cpus) n += s.gap_records;
        return n;
    }
    uint64_t lost() const {
        uint64_t n = 0;
        for (const auto& [cpu, s] : cpus) n += s.lost;
        return n;
    }
    bool accounted() const {
        return std::all_of(cpus.begin(), cpus.end(), [](const auto& c) { return c.second.accounted(); });
    }

    static StoreSummary of(const std::string& store) {
        StoreSummary out;
        for (const auto& file : shard_files(store)) {
            ReadOnlyDb db(file);
            sqlite3_stmt* stmt = db.statement(
                "SELECT cpu_id, count(*), max(sequence) FROM events WHERE sequence IS NOT NULL GROUP BY cpu_id");
            while (sqlite3_step(stmt) == SQLITE_ROW) {
                CpuSummary& c = out.cpus[uint16_t(sqlite3_column_int(stmt, 0))];
                c.events += uint64_t(sqlite3_column_int64(stmt, 1));
                c.max_sequence = std::max<uint64_t>(c.max_sequence, uint64_t(sqlite3_column_int64(stmt, 2)));
            }
            stmt = db.statement("SELECT cpu_id, payload FROM events WHERE event_type = 'synthetic.gap'");
            while (sqlite3_step(stmt) == SQLITE_ROW) {
                CpuSummary& c = out.cpus[uint16_t(sqlite3_column_int(stmt, 0))];
                const auto* blob = static_cast<const uint8_t*>(sqlite3_column_blob(stmt, 1));
                const auto gap = nlohmann::json::from_msgpack(blob, blob + sqlite3_column_bytes(stmt, 1));
                c.gap_records += 1;
                c.lost += gap.at("count").get<uint64_t>();
                c.max_gap_end = std::max(c.max_gap_end, gap.at("last_sequence").get<uint64_t>());
            }
            stmt = db.statement(
                "SELECT event_type, count(*) FROM events WHERE event_type IN "
                "('synthetic.startup', 'synthetic.shutdown', 'synthetic.storage_error') "
                "GROUP BY event_type");
            while (sqlite3_step(stmt) == SQLITE_ROW) {
                const std::string type = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
                const auto n = uint64_t(sqlite3_column_int64(stmt, 1));
                if (type == "synthetic.startup")
                    out.startup_records += n;
                else if (type == "synthetic.shutdown")
                    out.shutdown_records += n;
                else
                    out.storage_errors += n;
            }
        }
        return out;
    }
};

}  // namespace bench
