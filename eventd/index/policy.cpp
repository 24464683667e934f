#include "eventd/index/policy.hpp"

#include <algorithm>

#include "eventd/query_language/index_candidates.hpp"

namespace eventd::index {

PolicyState::PolicyState(std::map<std::string, FieldWindow> counters, const std::vector<DesiredIndex>& desired)
    : counters_(std::move(counters)) {
    for (const DesiredIndex& d : desired) members_.push_back(Member{d.field_path, d.is_expression, false, 0});
}

void PolicyState::add_counts(const FieldCounts& bumps, int64_t now_ns) {
    // Administrators' fields first: whatever the bumps hold, theirs find a slot.
    for (const bool admin_pass : {true, false})
        for (const auto& [field, bump] : bumps) {
            if (bump.by_admin != admin_pass) continue;
            auto it = counters_.find(field);
            if (it == counters_.end()) {
                // Fields only unprivileged users counted leave the reserve to administrators.
                const size_t slots = bump.by_admin ? kMaxFields : kMaxFields - kAdminReserve;
                if (counters_.size() >= slots) continue;
                it = counters_.emplace(field, FieldWindow{0, now_ns}).first;
            }
            it->second.count += bump.count;
        }
}

void PolicyState::add_manual(const std::string& field, int64_t now_ns) {
    std::erase_if(members_, [&](const Member& m) { return m.field == field; });
    members_.insert(members_.begin(), Member{field, query::is_expression_field(field), true, 0});
    counters_[field] = FieldWindow{0, now_ns};
}

bool PolicyState::recompute(const PolicyParams& params, int64_t now_ns) {
    std::vector<std::string> before;
    for (const Member& m : members_) before.push_back(m.field);
    auto member = [&](const std::string& field) {
        return std::find_if(members_.begin(), members_.end(), [&](const Member& m) { return m.field == field; });
    };

    // Every member has a window (a desired set loaded without its counters starts one now).
    for (const Member& m : members_) counters_.try_emplace(m.field, FieldWindow{0, now_ns});

    // 1. Roll complete windows; a member is judged on its completed window only.
    for (auto it = counters_.begin(); it != counters_.end();) {
        FieldWindow& w = it->second;
        // A window that starts in the future (the clock was set back) restarts now rather
        // than never completing.
        if (w.window_start_ns > now_ns + params.window_ns) w.window_start_ns = now_ns;
        if (now_ns - w.window_start_ns < params.window_ns) {
            ++it;
            continue;
        }
        const uint64_t completed = w.count;
        auto m = member(it->first);
        if (m != members_.end()) {
            if (completed < params.drop_threshold)
                members_.erase(m);  // §3.3.8: below the drop threshold over the window
            else
                m->last_window_count = completed;
        }
        w = FieldWindow{0, now_ns};
        if (member(it->first) == members_.end())
            it = counters_.erase(it);  // nothing counted in the new window yet: forget it
        else
            ++it;
    }

    // 2. Admit candidates that reached the create threshold within their window.
    for (const auto& [field, w] : counters_) {
        if (w.count < params.create_threshold || !query::is_candidate(field) || member(field) != members_.end()) continue;
        members_.push_back(Member{field, query::is_expression_field(field), false, 0});
    }

    // 3. INDEX members first (already newest first), then by frequency; stable for ties.
    auto weight = [&](const Member& m) {
        const auto it = counters_.find(m.field);
        return std::max(it == counters_.end() ? 0 : it->second.count, m.last_window_count);
    };
    std::stable_sort(members_.begin(), members_.end(), [&](const Member& a, const Member& b) {
        if (a.manual != b.manual) return a.manual;
        if (a.manual) return false;
        return weight(a) > weight(b);
    });

    if (before.size() != members_.size()) return true;
    for (size_t i = 0; i < before.size(); ++i)
        if (before[i] != members_[i].field) return true;
    return false;
}

std::vector<DesiredIndex> PolicyState::desired() const {
    std::vector<DesiredIndex> out;
    out.reserve(members_.size());
    for (const Member& m : members_) out.push_back(DesiredIndex{m.field, m.is_expression});
    return out;
}

}  // namespace eventd::index
