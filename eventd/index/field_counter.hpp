// The in-memory query counters of adaptive indexing (PSD-008 §3.3.2 part 1, §8.6.5): every
// EVENTS query that passes the access check bumps one counter per field it filters on
// (where_fields.hpp); the policy thread takes the accumulated bumps once per run and folds them
// into its per-field windows (policy.hpp). Query handlers never touch eventd-meta.db.
//
// Counting is shared state that any local user feeds, so it is bounded per contributor
// (issue 23 item 3):
//   - an unprivileged uid counts at most kMaxFieldsPerUser distinct fields per user window and
//     at most per_user_field_cap() queries per field (set by the policy thread below the
//     CreateThreshold: no single user decides an index; a field window overlaps at most two
//     user windows, so the cap is (CreateThreshold − 1) / 2);
//   - at most kMaxUsers unprivileged uids are tracked per user window;
//   - unprivileged users together leave kAdminReserve of the kMaxPendingFields slots free, so
//     an administrator's field is always counted.
// Bumps refused by a bound are counted in `overflowed` (eventctl status: not_counted).
//
// Cost per query: one short critical section over hash maps of the few fields of one query —
// nothing compared with opening one read connection per shard.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "eventd/common/lock_order.hpp"

namespace eventd::index {

// The queries counted for one field since the last take().
struct FieldBump {
    FieldBump(uint64_t n = 0, bool admin = false) : count(n), by_admin(admin) {}
    uint64_t count = 0;
    bool by_admin = false;  // an administrator counted it: it may use the reserved slots
};
using FieldCounts = std::unordered_map<std::string, FieldBump>;

// Who counts: the caller's uid, and whether the policy makes it an administrator.
struct Contributor {
    uid_t uid = 0;
    bool admin = false;
};

class FieldCounter {
public:
    static constexpr size_t kMaxPendingFields = 10000;
    static constexpr size_t kAdminReserve = 1000;
    static constexpr size_t kMaxFieldsPerUser = 64;
    static constexpr size_t kMaxUsers = 1024;

    // +1 for each of `fields` (a query's where_fields, already without duplicates), within the
    // bounds of `who`.
    void count(const std::vector<std::string>& fields, const Contributor& who);
    // The bumps since the last take(), and zero from now on (the policy thread).
    FieldCounts take();
    // The bumps since the last take(), left in place (eventctl status).
    FieldCounts peek() const;
    uint64_t overflowed() const;

    // A new user window: every unprivileged user's budget starts over; `per_field_cap` is the
    // most queries one unprivileged user may count for one field in it (the policy thread).
    void start_user_window(uint64_t per_field_cap);
    uint64_t per_user_field_cap() const;

private:
    // Rank field_counter (lock_order.hpp): a leaf in practice — nothing is taken under it.
    mutable RankedMutex mutex_{LockRank::field_counter};
    FieldCounts pending_;
    uint64_t overflowed_ = 0;
    // Unprivileged contributions in the current user window: uid → field → queries counted.
    std::unordered_map<uid_t, std::unordered_map<std::string, uint64_t>> users_;
    uint64_t per_user_field_cap_ = 49;  // (default CreateThreshold 100 − 1) / 2
};

}  // namespace eventd::index
