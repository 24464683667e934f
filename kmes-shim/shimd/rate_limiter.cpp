#include "rate_limiter.hpp"

#include <signal.h>

#include <algorithm>
#include <cerrno>

namespace kmes::shim {

RateLimiter::Bucket& RateLimiter::refill(const ProcessKey& process, Clock::time_point now) {
    auto [it, created] = buckets_.try_emplace(process, Bucket{double(rate_), now});  // created full
    Bucket& b = it->second;
    if (!created) {
        const double elapsed = std::chrono::duration<double>(now - b.last).count();
        b.tokens = std::min<double>(rate_, b.tokens + elapsed * rate_);
        b.last = now;
    }
    return b;
}

bool RateLimiter::reserve(const ProcessKey& process, uint32_t count, Clock::time_point now) {
    std::lock_guard lock(mutex_);
    Bucket& b = refill(process, now);
    if (b.tokens < count) return false;
    b.tokens -= count;
    return true;
}

void RateLimiter::refund(const ProcessKey& process, uint32_t count) {
    if (count == 0) return;
    std::lock_guard lock(mutex_);
    auto it = buckets_.find(process);
    if (it != buckets_.end()) it->second.tokens = std::min<double>(rate_, it->second.tokens + count);
}

void RateLimiter::set_rate(uint32_t rate_per_second) {
    std::lock_guard lock(mutex_);
    rate_ = rate_per_second;
    for (auto& [key, bucket] : buckets_) bucket.tokens = std::min<double>(bucket.tokens, rate_);
}

void RateLimiter::forget_exited() {
    std::lock_guard lock(mutex_);
    std::erase_if(buckets_, [](const auto& entry) { return kill(entry.first.first, 0) != 0 && errno == ESRCH; });
}

}  // namespace kmes::shim
