#include "forward/ack_window.hpp"

namespace eventd::forward {

uint64_t AckWindow::reserve(uint32_t records) {
    std::lock_guard lock(mutex_);
    slots_.push_back(Slot{records, false});
    counters_.published += records;
    counters_.pending += records;
    ++counters_.messages;
    if (++counters_.pending_messages == 1) last_progress_ = Clock::now();  // the ack timeout starts now
    return next_++;
}

void AckWindow::cancel() {
    std::lock_guard lock(mutex_);
    // The message stays in flight: nothing after it can persist, and the session ends.
    fail_locked("a publish was refused before it was sent");
}

void AckWindow::checkpoint(const std::string& cursor, int64_t newest_event_ns) {
    std::lock_guard lock(mutex_);
    checkpoints_.emplace_back(next_ - 1, PersistPoint{cursor, newest_event_ns});
    advance_locked();  // everything before may be acknowledged already
}

bool AckWindow::wait_for_room(uint64_t limit, Clock::time_point until) {
    std::unique_lock lock(mutex_);
    reader_waiting_ = true;
    const bool room = room_.wait_until(lock, until, [&] { return counters_.pending_messages < limit || failure_; });
    reader_waiting_ = false;
    return room && !failure_;
}

bool AckWindow::wait_drained(Clock::time_point until) { return wait_for_room(1, until); }

void AckWindow::acked(uint64_t number, bool duplicate) {
    std::lock_guard lock(mutex_);
    if (number <= contiguous_ || number >= next_) return;  // not ours, or acknowledged already
    Slot& slot = slots_[number - contiguous_ - 1];
    if (slot.acked) return;  // a second ack for one message (a server retry)
    slot.acked = true;
    counters_.acked += slot.records;
    counters_.pending -= slot.records;
    --counters_.pending_messages;
    if (duplicate) counters_.duplicates += slot.records;
    last_progress_ = Clock::now();
    if (reader_waiting_) room_.notify_one();
    advance_locked();
}

void AckWindow::advance_locked() {
    // Move the contiguous mark, then the persistable cursor with it.
    while (!slots_.empty() && slots_.front().acked) {
        slots_.pop_front();
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

void AckWindow::failed(const std::string& why) {
    std::lock_guard lock(mutex_);
    fail_locked(why);  // whichever record failed, the session ends; the first reason is kept
}

bool AckWindow::fail_if_stalled(std::chrono::milliseconds timeout) {
    std::lock_guard lock(mutex_);
    if (failure_ || counters_.pending_messages == 0 || Clock::now() - last_progress_ < timeout) return false;
    fail_locked("no acknowledgement from JetStream within " + std::to_string(timeout.count()) + " ms (" +
                std::to_string(counters_.pending_messages) +
                (counters_.pending_messages == 1 ? " message outstanding)" : " messages outstanding)"));
    return true;
}

void AckWindow::fail_locked(const std::string& why) {
    if (!failure_) failure_ = why;
    changed_.notify_all();
    room_.notify_all();
}

std::optional<PersistPoint> AckWindow::wait_persistable(const std::optional<PersistPoint>& have,
                                                        Clock::time_point until) {
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

}  // namespace eventd::forward
