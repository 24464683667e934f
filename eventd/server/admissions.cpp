#include "eventd/server/admissions.hpp"

#include <cerrno>

namespace eventd::server {

Admissions::Ticket& Admissions::Ticket::operator=(Ticket&& o) noexcept {
    if (this != &o) {
        release();
        owner_ = o.owner_;
        uid_ = o.uid_;
        admin_ = o.admin_;
        streaming_ = o.streaming_;
        o.owner_ = nullptr;
        o.streaming_ = false;
    }
    return *this;
}

namespace {
// The slots of `limit` a caller may fill: all of them for an administrator, the rest after the
// reserve for anyone else (at least one, so that a reserve as large as the limit cannot shut
// every unprivileged user out by accident of configuration).
uint32_t usable_slots(uint32_t limit, uint32_t reserve, bool admin) {
    if (admin) return limit;
    return reserve < limit ? limit - reserve : 1;
}
}  // namespace

base::Status Admissions::Ticket::add_stream(const ServerLimits& limits, QueryCounters& counters) {
    if (!owner_ || streaming_) return {};
    std::lock_guard lock(owner_->mutex_);
    // The user's own limit first: when both hold, it is the one the user can act on.
    PerUser& mine = owner_->per_user_[uid_];
    if (uid_ != 0 && mine.streams >= limits.max_streaming_queries_per_user) {  // root is exempt
        counters.refused_streaming_per_user.fetch_add(1, std::memory_order_relaxed);
        return base::Error{EBUSY, "too many concurrent streaming queries from this user"};
    }
    if (owner_->streaming_ >= usable_slots(limits.max_streaming_queries, limits.admin_reserved_queries, admin_)) {
        counters.refused_streaming.fetch_add(1, std::memory_order_relaxed);
        return base::Error{EBUSY, "too many concurrent streaming queries"};
    }
    ++mine.streams;
    ++owner_->streaming_;
    streaming_ = true;
    return {};
}

void Admissions::Ticket::release() {
    if (!owner_) return;
    std::lock_guard lock(owner_->mutex_);
    --owner_->active_;
    PerUser& mine = owner_->per_user_[uid_];
    --mine.connections;
    if (streaming_) {
        --owner_->streaming_;
        --mine.streams;
    }
    if (mine.connections == 0 && mine.running == 0) owner_->per_user_.erase(uid_);
    owner_ = nullptr;
    streaming_ = false;
}

base::Result<Admissions::Ticket> Admissions::admit(uid_t uid, bool admin, const ServerLimits& limits,
                                                   QueryCounters& counters) {
    std::lock_guard lock(mutex_);
    if (active_ >= usable_slots(limits.max_concurrent_queries, limits.admin_reserved_queries, admin)) {
        counters.refused_concurrency.fetch_add(1, std::memory_order_relaxed);
        return base::Error{EBUSY, "too many concurrent queries"};
    }
    PerUser& mine = per_user_[uid];
    if (uid != 0 && mine.connections >= limits.max_queries_per_user) {  // root is exempt
        if (mine.connections == 0) per_user_.erase(uid);
        counters.refused_per_user.fetch_add(1, std::memory_order_relaxed);
        return base::Error{EBUSY, "too many concurrent queries from this user"};
    }
    ++mine.connections;
    ++active_;
    counters.accepted.fetch_add(1, std::memory_order_relaxed);
    Ticket t;
    t.owner_ = this;
    t.uid_ = uid;
    t.admin_ = admin;
    return t;
}

Admissions::RunSlot::~RunSlot() {
    if (!owner_) return;
    {
        std::lock_guard lock(owner_->mutex_);
        PerUser& mine = owner_->per_user_[uid_];
        --mine.running;
        if (mine.connections == 0 && mine.running == 0) owner_->per_user_.erase(uid_);
    }
    // Every waiter looks again (waiters of other users too: one variable for all; they are few
    // and each rechecks its own count).
    owner_->slot_freed_.notify_all();
}

base::Result<Admissions::RunSlot> Admissions::run_slot(uid_t uid, bool admin, const ServerLimits& limits,
                                                       std::chrono::steady_clock::time_point deadline,
                                                       const std::atomic<bool>& stopping, QueryCounters& counters) {
    if (admin) return RunSlot{};  // root and Security.Admins: never wait behind anyone
    std::unique_lock lock(mutex_);
    bool counted = false;
    for (;;) {
        PerUser& mine = per_user_[uid];
        if (mine.running < limits.max_running_queries_per_user) {
            ++mine.running;
            RunSlot slot;
            slot.owner_ = this;
            slot.uid_ = uid;
            return slot;
        }
        if (!counted) {
            counters.waited_running_per_user.fetch_add(1, std::memory_order_relaxed);
            counted = true;
        }
        if (stopping.load()) return base::Error{base::ErrorCode::cancelled, "eventd is shutting down"};
        if (std::chrono::steady_clock::now() >= deadline)
            return base::Error{base::ErrorCode::timed_out,
                               "waited for " + std::to_string(mine.running) +
                                   " other queries of this user to finish (MaxRunningQueriesPerUser)"};
        // Woken by a released slot; the 100 ms bound is for `stopping`, which nothing signals here.
        slot_freed_.wait_until(lock,
                               std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(100)));
    }
}

uint32_t Admissions::active() const {
    std::lock_guard lock(mutex_);
    return active_;
}

uint32_t Admissions::streaming() const {
    std::lock_guard lock(mutex_);
    return streaming_;
}

}  // namespace eventd::server
