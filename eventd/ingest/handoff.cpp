#include "eventd/ingest/handoff.hpp"

namespace eventd {

bool Handoff::push(std::vector<HandoffItem>& items) {
    size_t next = 0;
    while (next < items.size()) {
        std::unique_lock lock(mutex_);
        not_full_.wait(lock, [&] { return closed_ || items_.size() < capacity_; });
        if (closed_) return false;
        while (next < items.size() && items_.size() < capacity_) items_.push_back(std::move(items[next++]));
        not_empty_.notify_one();
    }
    items.clear();
    return true;
}

size_t Handoff::pop(std::vector<HandoffItem>& out, size_t max, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    if (items_.empty()) not_empty_.wait_for(lock, timeout, [&] { return !items_.empty() || kicked_ || closed_; });
    kicked_ = false;
    size_t taken = 0;
    while (taken < max && !items_.empty()) {
        out.push_back(std::move(items_.front()));
        items_.pop_front();
        ++taken;
    }
    if (taken) not_full_.notify_all();
    return taken;
}

bool Handoff::empty() const {
    std::lock_guard lock(mutex_);
    return items_.empty();
}

size_t Handoff::size() const {
    std::lock_guard lock(mutex_);
    return items_.size();
}

void Handoff::set_capacity(size_t capacity) {
    std::lock_guard lock(mutex_);
    capacity_ = capacity;
    not_full_.notify_all();
}

void Handoff::kick() {
    std::lock_guard lock(mutex_);
    kicked_ = true;
    not_empty_.notify_all();
}

void Handoff::close() {
    std::lock_guard lock(mutex_);
    closed_ = true;
    not_full_.notify_all();
    not_empty_.notify_all();
}

}  // namespace eventd
