#include "forward/ack_window.hpp"

namespace eventd::forward {

uint64_t AckWindow::reserve(uintptr_t token) {
    std::lock_guard lock(mutex_);
    const uint64_t n = next_++;
    in_flight_[token] = n;
    ++counters_.published;
    ++counters_.pending;
    if (counters_.pending == 1) last_progress_ = std::chrono::steady_clock::now();
    return n;
}

void AckWindow::cancel(uintptr_t token) {
    std::lock_guard lock(mutex_);
    in_flight_.erase(token);
    if (!failure_) failure_ = "a publish was refused before it was sent";
    changed_.notify_all();
}

void AckWindow::checkpoint(const std::string& cursor, int64_t newest_event_ns) {
    std::lock_guard lock(mutex_);
    checkpoints_.emplace_back(next_ - 1, PersistPoint{cursor, newest_event_ns});
    advance_locked();
}

void AckWindow::acked(uintptr_t token, bool duplicate) {
    std::lock_guard lock(mutex_);
    const auto it = in_flight_.find(token);
    if (it == in_flight_.end()) return;  // not ours (a previous session's late ack)
    acked_above_.insert(it->second);
    in_flight_.erase(it);
    ++counters_.acked;
    --counters_.pending;
    if (duplicate) ++counters_.duplicates;
    last_progress_ = std::chrono::steady_clock::now();
    advance_locked();
}

void AckWindow::failed(uintptr_t token, const std::string& why) {
    std::lock_guard lock(mutex_);
    in_flight_.erase(token);
    if (!failure_) failure_ = why;
    changed_.notify_all();
}

void AckWindow::advance_locked() {
    while (!acked_above_.empty() && *acked_above_.begin() == contiguous_ + 1) {
        acked_above_.erase(acked_above_.begin());
        ++contiguous_;
    }
    bool moved = false;
    while (!checkpoints_.empty() && checkpoints_.front().first <= contiguous_) {
        persistable_ = std::move(checkpoints_.front().second);
        checkpoints_.pop_front();
        moved = true;
    }
    if (moved) changed_.notify_all();
}

std::optional<PersistPoint> AckWindow::wait_persistable(const std::optional<PersistPoint>& have,
                                                        std::chrono::steady_clock::time_point until) {
    std::unique_lock lock(mutex_);
    changed_.wait_until(lock, until, [&] { return persistable_ != have || failure_.has_value(); });
    return persistable_;
}

std::optional<PersistPoint> AckWindow::persistable() const {
    std::lock_guard lock(mutex_);
    return persistable_;
}

std::optional<std::string> AckWindow::failure() const {
    std::lock_guard lock(mutex_);
    return failure_;
}

WindowCounters AckWindow::counters() const {
    std::lock_guard lock(mutex_);
    return counters_;
}

std::chrono::steady_clock::time_point AckWindow::last_progress() const {
    std::lock_guard lock(mutex_);
    return last_progress_;
}

}  // namespace eventd::forward
