// Storage faults for the tests: eventd's test-only EVENTD_TEST_SQLITE_FAULTS_FILE
// (store/fault_vfs.hpp, builds with sync points only) makes SQLite writes and syncs of
// database and WAL files fail — SQLITE_FULL or SQLITE_IOERR — at the rate the file holds.
// eventd inherits the variable at spawn; set() changes the rate while it runs (eventd re-reads
// the file every 50 ms).
#pragma once

#include <stdio.h>
#include <stdlib.h>

#include <cstdint>
#include <fstream>
#include <string>

namespace eventd::it {

class SqliteFaults {
public:
    explicit SqliteFaults(const std::string& path) : path_(path) {
        set(0, 0);
        setenv("EVENTD_TEST_SQLITE_FAULTS_FILE", path_.c_str(), 1);
    }
    ~SqliteFaults() { unsetenv("EVENTD_TEST_SQLITE_FAULTS_FILE"); }
    SqliteFaults(const SqliteFaults&) = delete;
    SqliteFaults& operator=(const SqliteFaults&) = delete;
    // Fail this many of every million writes and syncs, drawn from `seed`; 0: none.
    void set(uint32_t per_million, uint64_t seed) {
        const std::string temporary = path_ + ".tmp";  // renamed over: eventd never reads half a file
        std::ofstream(temporary) << per_million << ' ' << seed << '\n';
        ::rename(temporary.c_str(), path_.c_str());
    }

private:
    std::string path_;
};

}  // namespace eventd::it
