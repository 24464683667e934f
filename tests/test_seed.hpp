// The seed of a test's random choices: from the environment variable `variable` when set (to
// replay a run), else a fresh one. Printed either way, with the line that replays it, on stdout
// (meson keeps it in the test's log) — a failure is then reproducible from the log alone.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>

inline uint64_t test_seed(const char* variable, const std::string& what) {
    uint64_t seed = 0;
    const char* given = std::getenv(variable);
    if (given && *given) {
        seed = std::strtoull(given, nullptr, 10);
    } else {
        seed = uint64_t(std::chrono::system_clock::now().time_since_epoch().count()) % 1000000000;
    }
    std::cout << what << ": seed " << seed << " (replay with " << variable << "=" << seed << ")" << std::endl;
    return seed;
}
