// Polling for a condition a daemon reaches on its own time (an index built, a counter
// moved): `done` is asked every 50 ms until it holds or `limit` passes. No sleep stands in
// for an assertion; the caller CHECKs what this returns.
#pragma once

#include <chrono>
#include <thread>

namespace kmes::it {

template <class F>
bool eventually(F done, std::chrono::steady_clock::duration limit = std::chrono::seconds(10)) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return true;
}

}  // namespace kmes::it
