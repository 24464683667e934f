#include "eventd/index/field_counter.hpp"

#include <mutex>

namespace eventd::index {

void FieldCounter::count(const std::vector<std::string>& fields) {
    if (fields.empty()) return;
    std::lock_guard lock(mutex_);
    for (const std::string& f : fields) {
        auto it = pending_.find(f);
        if (it != pending_.end()) {
            ++it->second;
        } else if (pending_.size() < kMaxPendingFields) {
            pending_.emplace(f, 1);
        } else {
            ++overflowed_;
        }
    }
}

FieldCounts FieldCounter::take() {
    FieldCounts out;
    std::lock_guard lock(mutex_);
    out.swap(pending_);
    return out;
}

FieldCounts FieldCounter::peek() const {
    std::lock_guard lock(mutex_);
    return pending_;
}

uint64_t FieldCounter::overflowed() const {
    std::lock_guard lock(mutex_);
    return overflowed_;
}

}  // namespace eventd::index
