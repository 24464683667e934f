#include "eventd/ingest/gap_tracker.hpp"

namespace eventd {

GapTracker::Decision GapTracker::observe(uint64_t sequence, uint64_t timestamp) {
    Decision d;
    if (sequence == 0 || accounted_.contains(sequence)) {  // 0 is never assigned (PSD-003 §1.2)
        if (sequence > last_read_) {
            last_read_ = sequence;
            last_read_timestamp_ = timestamp;
        }
        return d;
    }
    // Everything between the previous event read (or the start of the boot) and this one
    // that nobody accounted for is lost: overwritten in the ring, dropped by KMES for size,
    // or emitted while eventd was down and since overwritten (PSD-008 §2.5.1).
    const uint64_t low = sequence > last_read_ ? last_read_ + 1 : 1;
    if (sequence > low) {
        for (auto [first, last] : accounted_.missing_within(low, sequence - 1)) {
            Gap gap{first, last, std::nullopt};
            if (last_read_ != 0 && first == last_read_ + 1) gap.last_seen_timestamp = last_read_timestamp_;
            d.gaps.push_back(gap);
            accounted_.add(first, last);
        }
    }
    accounted_.add(sequence, sequence);
    d.store = true;
    if (sequence > last_read_) {
        last_read_ = sequence;
        last_read_timestamp_ = timestamp;
    }
    return d;
}

}  // namespace eventd
