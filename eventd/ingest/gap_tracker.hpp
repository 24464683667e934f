// Per-CPU sequence tracking and gap detection (PSD-008 §2.5, DESIGN.md §3.1–§3.3).
//
// The tracker starts from the sequences already accounted for in the store for this boot and
// CPU (committed events and recorded gaps). For every event the drain thread reads it says
// whether to store it (never twice: accounted sequences are skipped, which is how a restart
// resumes from the ring without duplicates) and which sequences before it are lost — the
// unaccounted ones between the previous event read and this one (or from 1 for the first
// event of a session, which is the restart gap).
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "store/sequence_ranges.hpp"

namespace eventd {

struct Gap {
    uint64_t first;
    uint64_t last;
    std::optional<uint64_t> last_seen_timestamp;  // of sequence first − 1, when it was read
};

class GapTracker {
public:
    explicit GapTracker(store::SequenceRanges accounted = {}) : accounted_(std::move(accounted)) {}

    struct Decision {
        bool store = false;     // false: already accounted for (skip)
        std::vector<Gap> gaps;  // lost ranges before this event, to record first
    };
    Decision observe(uint64_t sequence, uint64_t timestamp);

    // Highest sequence accounted for (persisted or recorded as lost), 0 if none.
    uint64_t highest() const { return accounted_.highest(); }
    uint64_t last_read() const { return last_read_; }

private:
    store::SequenceRanges accounted_;
    uint64_t last_read_ = 0;  // sequence of the previous event read this session
    uint64_t last_read_timestamp_ = 0;
};

}  // namespace eventd
