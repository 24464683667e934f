// The slow disk of the tests: eventd's test-only EVENTD_TEST_COMMIT_DELAY_FILE
// (eventd/test_hooks.hpp, builds with sync points only) makes every COMMIT wait the number of
// milliseconds the file holds. eventd inherits the variable at spawn; set() changes the delay
// while it runs.
#pragma once

#include <stdlib.h>

#include <cstdint>
#include <fstream>
#include <string>

namespace eventd::it {

class CommitDelay {
public:
    CommitDelay(const std::string& path, uint32_t ms) : path_(path) {
        set(ms);
        setenv("EVENTD_TEST_COMMIT_DELAY_FILE", path_.c_str(), 1);
    }
    ~CommitDelay() { unsetenv("EVENTD_TEST_COMMIT_DELAY_FILE"); }
    CommitDelay(const CommitDelay&) = delete;
    CommitDelay& operator=(const CommitDelay&) = delete;
    void set(uint32_t ms) { std::ofstream(path_) << ms; }

private:
    std::string path_;
};

}  // namespace eventd::it
