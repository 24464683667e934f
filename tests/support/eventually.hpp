// Polling for a condition reached on someone else's time (a daemon's index built, a counter
// moved, a thread asleep): `done` is asked, then again every `step`, until it holds or `limit`
// has passed; true if it held. No sleep stands in for an assertion: the caller CHECKs or
// REQUIREs what this returns. Helpers that wait for a state poll through this, not through a
// deadline loop of their own (a wait on a descriptor or a ring reader blocks in poll(2) or in
// the reader instead).
#pragma once

#include <chrono>
#include <thread>

namespace test_support {

template <class F>
bool eventually(F done, std::chrono::steady_clock::duration limit = std::chrono::seconds(10),
                std::chrono::steady_clock::duration step = std::chrono::milliseconds(50)) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done()) {
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(step);
    }
    return true;
}

}  // namespace test_support
