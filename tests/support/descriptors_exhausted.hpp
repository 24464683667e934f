// This process out of descriptors, for the tests of what eventd's code does then (eventd's unit
// tests, the store tests). Header only.
#pragma once

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include <catch2/catch.hpp>

namespace eventd_unit {

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
