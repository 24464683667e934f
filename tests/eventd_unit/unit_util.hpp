// Helpers shared by eventd's unit tests (and the store tests): a KMES-like event row, descriptors
// used up. (The temporary directory is test_support::TempDir, tests/support/temp_dir.hpp.)
#pragma once

#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include <filesystem>
#include <string>

#include <catch2/catch.hpp>

#include "store/event_row.hpp"

namespace eventd_unit {

// A KMES event row of CPU 0: sequence and timestamp `n`, origin class 1, no payload.
inline eventd::store::EventRow kmes_row(uint64_t n, std::string type) {
    eventd::store::EventRow row;
    row.timestamp = n;
    row.cpu_id = 0;
    row.sequence = n;
    row.origin_class = 1;
    row.event_type = std::move(type);
    return row;
}

// This process at its RLIMIT_NOFILE, for tests of what happens then: the soft limit lowered
// to 256 and every free descriptor number below it taken. give_back(n) frees n of them; the
// destructor (or restore()) frees all and restores the limit.
class DescriptorsExhausted {
public:
    DescriptorsExhausted() {
        REQUIRE(getrlimit(RLIMIT_NOFILE, &saved_) == 0);
        rlimit low = saved_;
        low.rlim_cur = std::min<rlim_t>(saved_.rlim_cur, 256);
        REQUIRE(setrlimit(RLIMIT_NOFILE, &low) == 0);
        for (int fd; (fd = dup(0)) >= 0;) fillers_.push_back(fd);
        fill_errno_ = errno;
    }
    ~DescriptorsExhausted() { restore(); }
    DescriptorsExhausted(const DescriptorsExhausted&) = delete;
    DescriptorsExhausted& operator=(const DescriptorsExhausted&) = delete;

    int fill_errno() const { return fill_errno_; }  // what the last dup() said: EMFILE
    void give_back(size_t n) {
        for (; n > 0 && !fillers_.empty(); --n) {
            close(fillers_.back());
            fillers_.pop_back();
        }
    }
    void restore() {
        if (restored_) return;
        give_back(fillers_.size());
        setrlimit(RLIMIT_NOFILE, &saved_);
        restored_ = true;
    }

private:
    rlimit saved_{};
    std::vector<int> fillers_;
    int fill_errno_ = 0;
    bool restored_ = false;
};

}  // namespace eventd_unit
