#include "sequence_ranges.hpp"

#include <algorithm>
#include <cassert>
#include <iterator>
#include <limits>

namespace eventd::store {

namespace {
constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

// [a, b] and a range starting at `next` touch when next <= b + 1 (no overflow at kMax).
bool reaches(uint64_t b, uint64_t next) { return b == kMax || next <= b + 1; }
}  // namespace

void SequenceRanges::add(uint64_t first, uint64_t last) {
    assert(first <= last);
    uint64_t new_first = first;
    uint64_t new_last = last;
    auto it = ranges_.upper_bound(first);
    if (it != ranges_.begin()) {
        auto before = std::prev(it);
        if (reaches(before->second, first)) {
            new_first = before->first;
            new_last = std::max(new_last, before->second);
            it = ranges_.erase(before);
        }
    }
    while (it != ranges_.end() && reaches(new_last, it->first)) {
        new_last = std::max(new_last, it->second);
        it = ranges_.erase(it);
    }
    ranges_.emplace_hint(it, new_first, new_last);
}

void SequenceRanges::add(const SequenceRanges& other) {
    for (const auto& [first, last] : other.ranges_) add(first, last);
}

bool SequenceRanges::contains(uint64_t sequence) const {
    auto it = ranges_.upper_bound(sequence);
    if (it == ranges_.begin()) return false;
    return std::prev(it)->second >= sequence;
}

uint64_t SequenceRanges::highest() const { return ranges_.empty() ? 0 : ranges_.rbegin()->second; }

std::vector<std::pair<uint64_t, uint64_t>> SequenceRanges::missing_within(uint64_t first, uint64_t last) const {
    std::vector<std::pair<uint64_t, uint64_t>> missing;
    if (first > last) return missing;
    uint64_t cursor = first;  // lowest sequence of [first, last] not yet known to be covered
    auto it = ranges_.upper_bound(first);
    if (it != ranges_.begin()) {
        auto before = std::prev(it);
        if (before->second >= cursor) {
            if (before->second >= last) return missing;
            cursor = before->second + 1;
        }
    }
    for (; it != ranges_.end() && it->first <= last; ++it) {
        if (it->first > cursor) missing.emplace_back(cursor, it->first - 1);
        if (it->second >= last) return missing;
        cursor = it->second + 1;
    }
    missing.emplace_back(cursor, last);
    return missing;
}

std::vector<std::pair<uint64_t, uint64_t>> not_accounted(const SequenceState& state, const BootCpu& key,
                                                         std::vector<std::pair<uint64_t, uint64_t>> ranges) {
    const auto it = state.find(key);
    if (it == state.end()) return ranges;
    std::vector<std::pair<uint64_t, uint64_t>> left;
    for (const auto& [first, last] : ranges)
        for (const auto& part : it->second.missing_within(first, last)) left.push_back(part);
    return left;
}

}  // namespace eventd::store
