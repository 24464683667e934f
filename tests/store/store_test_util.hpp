// Helpers for the store tests: a raw SQLite connection for looking at what ShardDb wrote, and
// rows committed. (The temporary directory and the rows are tests/support's: temp_dir.hpp,
// rows.hpp.)
#pragma once

#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "store/shard_db.hpp"
#include "support/rows.hpp"

namespace store_test {

namespace fs = std::filesystem;
using eventd::store::EventRow;
using kmes::Guid;

// A plain connection, as a query reader or an administrator would open one.
class RawDb {
public:
    explicit RawDb(const fs::path& file, int flags = SQLITE_OPEN_READWRITE) {
        REQUIRE(sqlite3_open_v2(file.c_str(), &db_, flags, nullptr) == SQLITE_OK);
        sqlite3_busy_timeout(db_, 5000);
    }
    ~RawDb() { sqlite3_close_v2(db_); }
    sqlite3* get() const { return db_; }

    void exec(const std::string& sql) {
        char* err = nullptr;
        const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
        INFO(sql << ": " << (err ? err : ""));
        sqlite3_free(err);
        REQUIRE(rc == SQLITE_OK);
    }
    // Every row of the result, each column as text ("NULL" for NULL).
    std::vector<std::vector<std::string>> rows(const std::string& sql) {
        sqlite3_stmt* stmt = nullptr;
        INFO(sql << ": " << sqlite3_errmsg(db_));
        REQUIRE(sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK);
        std::vector<std::vector<std::string>> out;
        int rc;
        while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
            std::vector<std::string> row;
            for (int i = 0; i < sqlite3_column_count(stmt); ++i) {
                const unsigned char* text = sqlite3_column_text(stmt, i);
                row.push_back(text ? reinterpret_cast<const char*>(text) : "NULL");
            }
            out.push_back(std::move(row));
        }
        sqlite3_finalize(stmt);
        REQUIRE(rc == SQLITE_DONE);
        return out;
    }
    std::string value(const std::string& sql) {
        auto r = rows(sql);
        REQUIRE(r.size() == 1);
        REQUIRE(r[0].size() == 1);
        return r[0][0];
    }
    long long count(const std::string& sql) { return std::stoll(value(sql)); }

private:
    sqlite3* db_ = nullptr;
};

inline std::unique_ptr<eventd::store::ShardDb> open_shard(const fs::path& dir, uint32_t index = 0) {
    auto db = eventd::store::ShardDb::open(dir, index);
    INFO((db ? std::string() : db.error().message));
    REQUIRE(db.ok());
    return std::move(db).value();
}

// Insert and account sequences [first, last] of (boot, cpu) in one committed transaction.
inline void commit_range(eventd::store::ShardDb& db, const Guid& boot, uint16_t cpu, uint64_t first, uint64_t last) {
    REQUIRE(db.begin().ok());
    for (uint64_t s = first; s <= last; ++s)
        REQUIRE(
            db.insert(test_support::event_row({.boot = boot, .timestamp = 1000 + s, .cpu = cpu, .sequence = s})).ok());
    REQUIRE(db.account(boot, cpu, first, last).ok());
    auto committed = db.commit();
    INFO((committed ? std::string() : committed.error().message));
    REQUIRE(committed.ok());
}

// Run `work` in a child process that then dies without closing anything, like a SIGKILLed
// eventd: committed data stays in the -wal, which only a clean close would checkpoint away.
// `work` must not use Catch2 assertions (they would unwind into the child's copy of the runner).
inline void in_crashing_child(const std::function<bool()>& work) {
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        bool ok = false;
        try {
            ok = work();
        } catch (...) {}
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
}

inline std::string read_file(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void write_file(const fs::path& file, const std::string& bytes) {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << bytes;
}

}  // namespace store_test
