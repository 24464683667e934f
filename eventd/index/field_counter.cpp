#include "eventd/index/field_counter.hpp"

#include <mutex>

namespace eventd::index {

void FieldCounter::count(const std::vector<std::string>& fields, const Contributor& who) {
    if (fields.empty()) return;
    std::lock_guard lock(mutex_);
    std::unordered_map<std::string, uint64_t>* mine = nullptr;
    if (!who.admin) {
        auto user = users_.find(who.uid);
        if (user == users_.end()) {
            if (users_.size() >= kMaxUsers) {
                overflowed_ += fields.size();
                return;
            }
            user = users_.emplace(who.uid, std::unordered_map<std::string, uint64_t>{}).first;
        }
        mine = &user->second;
    }
    // Unprivileged users together stop short of the slots reserved for administrators.
    const size_t slots = who.admin ? kMaxPendingFields : kMaxPendingFields - kAdminReserve;
    for (const std::string& f : fields) {
        uint64_t* budget = nullptr;
        if (mine) {
            auto used = mine->find(f);
            if (used == mine->end()) {
                if (mine->size() >= kMaxFieldsPerUser) {
                    ++overflowed_;
                    continue;
                }
                used = mine->emplace(f, 0).first;
            }
            if (used->second >= per_user_field_cap_) {
                ++overflowed_;
                continue;
            }
            budget = &used->second;
        }
        auto it = pending_.find(f);
        if (it == pending_.end()) {
            if (pending_.size() >= slots) {
                ++overflowed_;
                continue;
            }
            it = pending_.emplace(f, FieldBump{}).first;
        }
        ++it->second.count;
        it->second.by_admin = it->second.by_admin || who.admin;
        if (budget) ++*budget;
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

void FieldCounter::start_user_window(uint64_t per_field_cap) {
    std::lock_guard lock(mutex_);
    users_.clear();
    per_user_field_cap_ = per_field_cap;
}

uint64_t FieldCounter::per_user_field_cap() const {
    std::lock_guard lock(mutex_);
    return per_user_field_cap_;
}

}  // namespace eventd::index
