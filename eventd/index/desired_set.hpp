// The global desired index set (PSD-008 §3.3.2): the meeting point of the policy half
// (counters → policy thread → eventd-meta.db, the only writer of the set) and the
// convergence half (shard writers, which only read it).
//
// A DesiredSet is immutable once published; readers take a shared_ptr snapshot and never
// see a half-updated list. The holder's mutex is a leaf: nothing else is taken under it (the
// on_publish listener runs after it is released).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace eventd::index {

// One member: a header column (`event_type`) or a payload path (`source.name`).
struct DesiredIndex {
    std::string field_path;
    bool is_expression = false;  // a payload path: an expression index over msgpack_extract
    bool operator==(const DesiredIndex&) const = default;
};

struct DesiredSet {
    // Most important first: position = priority (§3.3.9 `priority`, lower = higher).
    std::vector<DesiredIndex> indexes;
    // Bumped by every publish; a writer compares it to the one it converged to.
    uint64_t version = 0;
};

class DesiredSetHolder {
public:
    DesiredSetHolder() : current_(std::make_shared<const DesiredSet>()) {}

    std::shared_ptr<const DesiredSet> current() const {
        std::lock_guard lock(mutex_);
        return current_;
    }
    // Called by the policy thread only (and once at startup with the persisted set).
    void publish(std::vector<DesiredIndex> indexes) {
        std::function<void()> listener;
        {
            std::lock_guard lock(mutex_);
            auto next = std::make_shared<DesiredSet>();
            next->indexes = std::move(indexes);
            next->version = current_->version + 1;
            current_ = std::move(next);
            listener = on_publish_;
        }
        if (listener) listener();
    }
    // Called after every later publish, on the publishing thread, with no lock held: the
    // daemon wakes its idle shard writers, which otherwise sleep until events arrive.
    void set_on_publish(std::function<void()> listener) {
        std::lock_guard lock(mutex_);
        on_publish_ = std::move(listener);
    }

private:
    mutable std::mutex mutex_;  // leaf
    std::shared_ptr<const DesiredSet> current_;
    std::function<void()> on_publish_;
};

}  // namespace eventd::index
