// Where a Sigma rule's auditd field is in eventd's assembled audit event (docs/DETECTION.md
// "Field mapping"; the event's shape: docs/AUDIT.md). SigmaHQ's linux/auditd rules are written
// against auditd's records one by one (`type: EXECVE` with `a0`…, `type: PATH` with `name`, the
// SYSCALL record's `exe`, `comm`, `key`); eventd stores one event per audit event, its records
// assembled:
//
//   type                   → any of `record_types` (each record's type, EOE left out)
//   a0, a1, …              → argv[0], argv[1], … — in a selection whose `type` is SYSCALL alone,
//                            the SYSCALL record's own a0…a3 (the syscall's arguments, hex)
//   argc                   → argc
//   name, nametype, inode, dev, mode, ouid, ogid, rdev, item, cap_fp, cap_fi, cap_fe, cap_fver,
//   obj                    → the field of any of `paths` (one map per PATH record)
//   syscall, SYSCALL       → the syscall's name (`execve`) or its number (`syscall_nr`), either
//   uid, auid, euid, …     → the number or its name (`uid_name`), either; `unset` for the unset
//                            id 4294967295 (which has no name in eventd's events)
//   anything else          → the payload's field of that name (the first record's fields,
//                            `cwd`, `proctitle`, `msg`, …)
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <unordered_map>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace eventd::detection {

struct AuditField {
    enum class Kind { payload, argv, record_type, any_path };
    Kind kind = Kind::payload;
    std::string name;  // payload / any_path: the key; as the rule wrote it otherwise
    size_t index = 0;  // argv
    std::string also;  // payload: a second key whose value counts too (uid → uid_name)
};

// `sigma_field` as it reads in a selection whose `type` values are `selection_types` (empty:
// no type in it; upper-case as auditd writes them).
AuditField map_audit_field(std::string_view sigma_field, const std::vector<std::string>& selection_types);

// An audit event flattened once for evaluation (PERFORMANCE.md §18): every value a rule can
// test, by where audit_fields.hpp maps fields — the payload's scalars by key, `argv` by
// position, `record_types`, each PATH field across `paths`, and every string and integer
// anywhere for keywords — as text (integers as their decimal text, booleans as true/false; an
// id field's 4294967295 also as `unset`). Built from the decoded payload, which must outlive
// it (the strings are views into it). Every rule then looks its fields up here, not in the tree.
class EventView {
public:
    explicit EventView(const nlohmann::json& event);

    // The values of `field` (empty when the event has none).
    std::span<const std::string_view> values(const AuditField& field) const;
    // Every string and integer of the event, nested ones too.
    std::span<const std::string_view> all_values() const { return all_; }

private:
    using Values = std::vector<std::string_view>;
    std::string_view keep(std::string text);  // a value made here (a number's text)
    void add_all(const nlohmann::json& v);

    std::deque<std::string> made_;  // stable storage of the texts made here
    std::unordered_map<std::string_view, Values> payload_;
    std::unordered_map<std::string_view, Values> paths_;
    Values argv_;
    Values record_types_;
    Values all_;
};

// Whether `pred` holds for any value of `field` in `event`.
bool any_value(const EventView& event, const AuditField& field, const std::function<bool(std::string_view)>& pred);
// Whether `event` has a value of `field` (null is none).
bool has_field(const EventView& event, const AuditField& field);

}  // namespace eventd::detection
