// The floor eventd's writer is measured against: a bare SQLite insert loop on a shard created
// by the store itself (store::ShardDb::open — the same §3.1 schema, idx_events_timestamp,
// WAL, synchronous=FULL), then written over a plain connection with the same prepared INSERT
// text as ShardDb, in transactions of a given size: BEGIN IMMEDIATE, bind + step + reset per
// row, COMMIT. Nothing else: no drain, no handoff, no sequence_state, no own checkpointing
// (SQLite's automatic checkpoint at 1000 WAL pages runs inside COMMIT instead).
#pragma once

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "store/event_columns.hpp"
#include "store/event_row.hpp"
#include "store/shard_db.hpp"

namespace bench {

struct FloorResult {
    double seconds = 0;  // whole loop, wall time
    // Wall time at which each commit returned, and the rows committed by then.
    std::vector<std::pair<double, uint64_t>> progress;
};

inline void check(int rc, int want, sqlite3* db, const char* what) {
    if (rc != want) throw std::runtime_error(std::string("bare loop: ") + what + ": " + sqlite3_errmsg(db));
}

// Insert `rows` into a fresh shard 0 in `dir`, `batch` rows per transaction.
inline FloorResult bare_insert_loop(const std::filesystem::path& dir, std::span<const eventd::store::EventRow> rows,
                                    size_t batch) {
    std::filesystem::create_directories(dir);
    {
        auto shard = eventd::store::ShardDb::open(dir, 0);  // creates the schema, then closes
        if (!shard) throw std::runtime_error("bare loop: " + shard.error().message);
    }
    sqlite3* db = nullptr;
    const std::string path = (dir / eventd::store::shard_file_name(0)).string();
    check(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr), SQLITE_OK, db, "open");
    check(sqlite3_exec(db, "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr), SQLITE_OK, db, "WAL");
    check(sqlite3_exec(db, "PRAGMA synchronous=FULL", nullptr, nullptr, nullptr), SQLITE_OK, db, "FULL");
    sqlite3_stmt* stmt = nullptr;
    // The writer's own INSERT (§2.4.5), from store/'s column table.
    check(sqlite3_prepare_v2(db, eventd::store::insert_event_sql().c_str(), -1, &stmt, nullptr), SQLITE_OK, db,
          "prepare");

    FloorResult result;
    const auto start = std::chrono::steady_clock::now();
    size_t i = 0;
    while (i < rows.size()) {
        check(sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK, db, "BEGIN");
        for (const size_t end = std::min(rows.size(), i + batch); i < end; ++i) {
            const eventd::store::EventRow& r = rows[i];
            sqlite3_bind_blob(stmt, 1, r.boot_id.data(), 16, SQLITE_STATIC);
            sqlite3_bind_int64(stmt, 2, int64_t(r.timestamp));
            sqlite3_bind_int(stmt, 3, *r.cpu_id);
            sqlite3_bind_int64(stmt, 4, int64_t(*r.sequence));
            sqlite3_bind_int(stmt, 5, *r.origin_class);
            sqlite3_bind_text(stmt, 6, r.event_type.data(), int(r.event_type.size()), SQLITE_STATIC);
            sqlite3_bind_blob(stmt, 7, r.effective_token->data(), 16, SQLITE_STATIC);
            sqlite3_bind_blob(stmt, 8, r.true_token->data(), 16, SQLITE_STATIC);
            sqlite3_bind_blob(stmt, 9, r.process->data(), 16, SQLITE_STATIC);
            sqlite3_bind_blob(stmt, 10, r.payload->data(), int(r.payload->size()), SQLITE_STATIC);
            check(sqlite3_step(stmt), SQLITE_DONE, db, "insert");
            sqlite3_reset(stmt);
            sqlite3_clear_bindings(stmt);
        }
        check(sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK, db, "COMMIT");
        result.progress.emplace_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                                     i);
    }
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    sqlite3_finalize(stmt);
    sqlite3_close_v2(db);
    return result;
}

// Rows shaped like what eventd stores for the benchmark's events: a KMES header with identity
// GUIDs, type `type`, the given payload; `cpus` CPUs with consecutive sequences each.
inline std::vector<eventd::store::EventRow> make_rows(uint64_t per_cpu, uint32_t cpus, const std::string& type,
                                                      const std::vector<uint8_t>& payload) {
    std::vector<eventd::store::EventRow> rows;
    rows.reserve(per_cpu * cpus);
    kmes::Guid boot{}, token{}, process{};
    for (int i = 0; i < 16; ++i) {
        boot[i] = uint8_t(0x10 + i);
        token[i] = uint8_t(0x40 + i);
        process[i] = uint8_t(0x80 + i);
    }
    const uint64_t t0 = uint64_t(std::chrono::system_clock::now().time_since_epoch().count());
    for (uint32_t cpu = 0; cpu < cpus; ++cpu)
        for (uint64_t seq = 1; seq <= per_cpu; ++seq) {
            eventd::store::EventRow r;
            r.boot_id = boot;
            r.timestamp = t0 + rows.size() * 1000;  // increasing: appends to idx_events_timestamp
            r.cpu_id = uint16_t(cpu);
            r.sequence = seq;
            r.origin_class = 0;
            r.event_type = type;
            r.effective_token = token;
            r.true_token = token;
            r.process = process;
            r.payload = payload;
            rows.push_back(std::move(r));
        }
    return rows;
}

}  // namespace bench
