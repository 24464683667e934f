// The in-memory query counters of adaptive indexing (PSD-008 §3.3.2 part 1, §8.6.5): every
// EVENTS query bumps one counter per field it filters on (where_fields.hpp); the policy thread
// takes the accumulated bumps once per run and folds them into its per-field windows
// (policy.hpp). Query handlers never touch eventd-meta.db.
//
// Cost per query: one short critical section over a hash map of the few fields of one query —
// nothing compared with opening one read connection per shard. The map is bounded
// (kMaxPendingFields distinct fields between two policy runs); a field beyond it is not
// counted and `overflowed` says how many bumps were lost that way (a hostile client inventing
// payload paths cannot grow eventd's memory).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "eventd/lock_order.hpp"

namespace eventd::index {

using FieldCounts = std::unordered_map<std::string, uint64_t>;

class FieldCounter {
public:
    static constexpr size_t kMaxPendingFields = 10000;

    // +1 for each of `fields` (a query's where_fields, already without duplicates).
    void count(const std::vector<std::string>& fields);
    // The bumps since the last take(), and zero from now on (the policy thread).
    FieldCounts take();
    // The bumps since the last take(), left in place (eventctl status).
    FieldCounts peek() const;
    uint64_t overflowed() const;

private:
    // Rank field_counter (lock_order.hpp): a leaf in practice — nothing is taken under it.
    mutable RankedMutex mutex_{LockRank::field_counter};
    FieldCounts pending_;
    uint64_t overflowed_ = 0;
};

}  // namespace eventd::index
