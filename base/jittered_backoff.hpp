// Exponential backoff with jitter for the clients that reconnect after a failure (eventd-forward's
// sessions, the collector's): from 100 ms, doubling up to a cap; each wait is drawn from
// [half, whole], so processes restarted together do not retry in step. One thread uses it.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>

namespace base {

class JitteredBackoff {
public:
    explicit JitteredBackoff(std::chrono::milliseconds cap) : cap_(cap) {}

    // The wait before the next attempt; the one after it is twice as long (up to the cap).
    std::chrono::milliseconds next() {
        const int64_t whole = std::min(whole_, cap_).count();
        whole_ = std::min(whole_ * 2, cap_);
        std::uniform_int_distribution<int64_t> jitter(whole / 2, whole);
        return std::chrono::milliseconds(jitter(rng_));
    }
    void reset() { whole_ = kFirst; }  // an attempt made progress: start small again

private:
    static constexpr std::chrono::milliseconds kFirst{100};
    std::chrono::milliseconds cap_;
    std::chrono::milliseconds whole_ = kFirst;
    std::mt19937_64 rng_{std::random_device{}()};
};

}  // namespace base
