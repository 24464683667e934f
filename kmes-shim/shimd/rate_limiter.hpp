// Per-process token buckets for syscall emission (PSD-003 §4.1.2 "Token bucket"):
// capacity = refill per second = MaxEmitRatePerProcess; created full on a process's first
// emit; only emitted events are charged (batches reserve `count` atomically and refund the
// unused tokens). Root (SeTcbPrivilege) never reaches the limiter.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>

namespace kmes::shim {

class RateLimiter {
public:
    using Clock = std::chrono::steady_clock;
    // Processes are keyed by (pid, start time) so a reused pid starts with a fresh bucket.
    using ProcessKey = std::pair<pid_t, uint64_t>;

    explicit RateLimiter(uint32_t rate_per_second) : rate_(rate_per_second) {}

    // Take `count` tokens if the bucket holds that many (§4.1.3 step 3); false → EAGAIN.
    bool reserve(const ProcessKey& process, uint32_t count, Clock::time_point now = Clock::now());
    // Give back tokens reserved but not used (events that were not emitted).
    void refund(const ProcessKey& process, uint32_t count);
    // MaxEmitRatePerProcess changed: new capacity and rate at once; tokens clamped down.
    void set_rate(uint32_t rate_per_second);
    // Drop the buckets of processes that have exited (called by the server periodically).
    void forget_exited();

private:
    struct Bucket {
        double tokens;
        Clock::time_point last;
    };
    Bucket& refill(const ProcessKey& process, Clock::time_point now);

    std::mutex mutex_;
    uint32_t rate_;
    std::map<ProcessKey, Bucket> buckets_;
};

}  // namespace kmes::shim
