#include "store_fill.hpp"

#include <sqlite3.h>

#include <filesystem>

#include <catch2/catch.hpp>

#include "store/msgpack_extract.hpp"
#include "store/shard_db.hpp"

namespace eventd::it {

void prefill_shard(const std::string& store_dir, const OldRows& old) {
    std::filesystem::create_directories(store_dir);
    const std::string file = store_dir + "/" + eventd::store::shard_file_name(old.shard);
    if (!std::filesystem::exists(file)) REQUIRE(eventd::store::ShardDb::open(store_dir, old.shard).ok());  // schema
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(file.c_str(), &db) == SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    // A shard with payload expression indexes needs the function their expressions call.
    REQUIRE(eventd::store::register_msgpack_extract(db).ok());
    const int64_t base =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count() -
        old.age.count();
    std::string boot = "x'";
    for (const uint8_t b : old.boot) {
        char hex[3];
        std::snprintf(hex, sizeof hex, "%02x", b);
        boot += hex;
    }
    boot += "'";
    const std::string first = std::to_string(old.first_sequence);
    const std::string last = std::to_string(old.first_sequence + old.rows - 1);
    const std::string cpu = std::to_string(old.cpu);
    const std::string sql = "BEGIN; WITH RECURSIVE n(i) AS (SELECT " + first + " UNION ALL SELECT i + 1 FROM n WHERE i < " +
                            last +
                            ") INSERT INTO events(boot_id, timestamp, cpu_id, sequence, origin_class, event_type, "
                            "payload) SELECT " +
                            boot + ", " + std::to_string(base) + " + (i - " + first + ") * 1000, " + cpu +
                            ", i, 0, 'test.old', x'81a475736572a7' || CAST(printf('u%06d', i % "
                            "1000000) AS BLOB) FROM n; INSERT INTO sequence_state VALUES (" +
                            boot + ", " + cpu + ", " + first + ", " + last + "); COMMIT;";
    char* error = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
    INFO(file << ": " << (error ? error : ""));
    sqlite3_free(error);
    sqlite3_close(db);
    REQUIRE(rc == SQLITE_OK);
}

std::string integrity_check(const std::string& file) {
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
        const std::string why = db ? sqlite3_errmsg(db) : "out of memory";
        sqlite3_close(db);
        return "cannot open: " + why;
    }
    sqlite3_busy_timeout(db, 5000);
    std::string result;
    if (auto s = eventd::store::register_msgpack_extract(db); !s) {
        result = "cannot register msgpack_extract: " + s.error().message;
    } else {
        char* error = nullptr;
        const int rc = sqlite3_exec(
            db, "PRAGMA integrity_check",
            [](void* out, int, char** values, char**) {
                auto& text = *static_cast<std::string*>(out);
                if (!text.empty()) text += "; ";
                text += values[0] ? values[0] : "NULL";
                return 0;
            },
            &result, &error);
        if (rc != SQLITE_OK) result = std::string("integrity_check failed: ") + (error ? error : sqlite3_errstr(rc));
        sqlite3_free(error);
    }
    sqlite3_close(db);
    return result;
}

}  // namespace eventd::it
