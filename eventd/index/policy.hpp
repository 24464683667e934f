// The adaptive-index policy as a pure computation (PSD-008 §3.3.2 part 2, §3.3.8): per-field
// query counts in windows → the desired set. No clock, no I/O: every call takes `now_ns`, so
// tests drive time by hand (tests/eventd_unit/index_policy_test.cpp); the policy thread
// (policy_thread.hpp) supplies the wall clock and persists the result in eventd-meta.db.
//
// What "the window" means (AdaptiveIndexWindowHours = W). Each counted field has its own
// tumbling window: it starts when the field is first counted (window_start, ns since the
// epoch, persisted in index_counters) and query_count counts the queries since then. A policy
// run at time `now` does, in order:
//   1. Roll: every window with now − window_start ≥ W is complete. A desired field whose
//      completed window holds fewer than DropThreshold queries leaves the set (§3.3.8); the
//      window then restarts at `now` with a count of 0. A field that is neither desired nor
//      counted in its new window is forgotten.
//   2. Admit: a candidate field (candidates.hpp) not yet desired whose current window holds at
//      least CreateThreshold queries joins at once — no need to wait for the window's end.
//   3. Order: fields added with EVENTS INDEX first (the newest first), then the others by
//      frequency, most queried first: max(current window, last completed window), ties keep
//      their previous order.
// So a desired field is only ever judged on a whole window (one that just joined is judged
// at the end of its current window; hysteresis: join at ≥ create, leave below drop < create).
// EVENTS INDEX (add_manual) puts a field first and restarts its window at 0, so it stays at
// least one whole window and then follows the drop rule like any other (§8.2.7, no unindex).
//
// Kept in memory only (lost at restart, by design of the §3.3.9 schema): which members came
// from INDEX and the count of each member's last completed window. After a restart the
// persisted priority order is kept until the next run, which then orders every member by
// frequency.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "eventd/index/desired_set.hpp"
#include "eventd/index/field_counter.hpp"

namespace eventd::index {

// One field's current window (index_counters row).
struct FieldWindow {
    uint64_t count = 0;
    int64_t window_start_ns = 0;
};

struct PolicyParams {
    uint64_t create_threshold = 100;
    uint64_t drop_threshold = 10;
    int64_t window_ns = int64_t(24) * 3600 * 1'000'000'000;
};

struct Member {
    std::string field;
    bool is_expression = false;
    bool manual = false;             // added by EVENTS INDEX and not dropped since
    uint64_t last_window_count = 0;  // count of its last completed window (ordering only)
};

class PolicyState {
public:
    // At most this many counted fields; bumps of further fields wait until a roll frees room.
    static constexpr size_t kMaxFields = 10000;
    // Of which fields counted by unprivileged users only may not take the last kAdminReserve.
    static constexpr size_t kAdminReserve = FieldCounter::kAdminReserve;

    PolicyState() = default;
    // From eventd-meta.db: counters, and the desired set in priority order.
    PolicyState(std::map<std::string, FieldWindow> counters, const std::vector<DesiredIndex>& desired);

    // Fold in the bumps of FieldCounter::take(); a field counted for the first time opens its
    // window at `now_ns`.
    void add_counts(const FieldCounts& bumps, int64_t now_ns);
    // EVENTS INDEX: first place, its window restarted at `now_ns` (the caller checked
    // candidate_problem()).
    void add_manual(const std::string& field, int64_t now_ns);
    // Roll, admit, order (see the top of the file). True when the desired list changed
    // (membership or order).
    bool recompute(const PolicyParams& params, int64_t now_ns);

    std::vector<DesiredIndex> desired() const;
    const std::vector<Member>& members() const { return members_; }
    const std::map<std::string, FieldWindow>& counters() const { return counters_; }

private:
    std::map<std::string, FieldWindow> counters_;
    std::vector<Member> members_;  // priority order
};

}  // namespace eventd::index
