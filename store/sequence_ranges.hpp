// The per-boot sequence state (DESIGN.md §4.3, §8): for each (boot, cpu) the set of
// sequences that are *accounted for* — committed as events, or recorded as lost in a
// synthetic.gap — kept as coalesced closed ranges. Ranges, not a high-water mark, because
// the shards fed by one CPU commit independently: after a crash the committed set can have
// holes, and only ranges tell a restart exactly which events to store and which to skip.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "event_row.hpp"

namespace eventd::store {

class SequenceRanges {
public:
    // Add [first, last] (first <= last), merging with overlapping or adjacent ranges.
    void add(uint64_t first, uint64_t last);
    void add(const SequenceRanges& other);
    bool contains(uint64_t sequence) const;
    // Highest accounted sequence, 0 when empty.
    uint64_t highest() const;
    bool empty() const { return ranges_.empty(); }
    // Sub-ranges of [first, last] that are NOT accounted for, in order.
    std::vector<std::pair<uint64_t, uint64_t>> missing_within(uint64_t first, uint64_t last) const;
    // first → last, disjoint, non-adjacent, ascending.
    const std::map<uint64_t, uint64_t>& ranges() const { return ranges_; }
    bool operator==(const SequenceRanges&) const = default;

private:
    std::map<uint64_t, uint64_t> ranges_;
};

struct BootCpu {
    kmes::Guid boot_id;
    uint16_t cpu_id;
    auto operator<=>(const BootCpu&) const = default;
};

using SequenceState = std::map<BootCpu, SequenceRanges>;

// The parts of `ranges` (ascending, disjoint) that `state` does not account for under `key`.
std::vector<std::pair<uint64_t, uint64_t>> not_accounted(const SequenceState& state, const BootCpu& key,
                                                         std::vector<std::pair<uint64_t, uint64_t>> ranges);

}  // namespace eventd::store
