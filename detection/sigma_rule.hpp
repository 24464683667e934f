// A Sigma rule (SigmaHQ's specification, "Sigma rules") read from its YAML with yaml-cpp and
// compiled whole, or refused whole with the exact reason: a rule is never half-applied.
//
//   title, id (required), status, description, level, tags, logsource
//   detection:
//     <identifier>: {field|modifier|…: value or [values]}   a map: every field holds (AND)
//     <identifier>: [{…}, {…}]                               maps: any of them (OR)
//     <identifier>: [value, …]                               keywords: any string in the event
//     condition: <expression> (condition.hpp), or a list of them (any)
//
// Modifiers: contains, startswith, endswith, all, cased, re (with i, m, s), base64,
// base64offset, windash, exists, gt, gte, lt, lte. A value list matches any value, all with
// `all`; null matches an absent field. Fields are auditd's, mapped to eventd's assembled audit
// events by audit_fields.hpp; a rule must have logsource product linux and service auditd.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.hpp"
#include "detection/audit_fields.hpp"
#include "detection/condition.hpp"
#include "detection/value_pattern.hpp"

namespace eventd::detection {

struct RuleInfo {
    std::string id;  // the Sigma id (a UUID in SigmaHQ's rules), the alert's rule_id
    std::string title;
    std::string level;  // informational, low, medium, high or critical
    std::string status;
    std::string description;
    std::vector<std::string> tags;
};

class SigmaRule {
public:
    // Parses and compiles one rule (one YAML document). Errors: ErrorCode::invalid (malformed
    // YAML with its line, a missing id, title or detection, a condition naming no identifier, a
    // bad regular expression) or ErrorCode::not_supported (an aggregation, an unknown modifier, a
    // logsource other than auditd) — each naming the rule part.
    static base::Result<SigmaRule> compile(std::string_view yaml);

    const RuleInfo& info() const { return info_; }
    // The Sigma fields the detection reads, sorted: what an alert copies from its event.
    const std::vector<std::string>& fields() const { return fields_; }
    // Each of fields() with where it is in an audit event (as its first use maps it).
    const std::vector<std::pair<std::string, AuditField>>& field_refs() const { return field_refs_; }
    // Whether `event` (an audit event's decoded payload) matches the rule.
    bool matches(const nlohmann::json& event) const;
    // The same on the event flattened once (audit_fields.hpp): what the detector does, one view
    // for every rule.
    bool matches(const EventView& event) const;

    // A value test on one field. Public for the compiler in sigma_rule.cpp only.
    struct FieldTest {
        enum class Kind { patterns, exists, absent, greater, greater_equal, less, less_equal };
        Kind kind = Kind::patterns;
        AuditField field;
        // One group per value the rule wrote, matched when any pattern of it matches (a value
        // base64offset or windash expands is several); any group, all of them with `all`.
        std::vector<std::vector<ValuePattern>> patterns;
        bool all = false;
        bool exists = true;  // Kind::exists
        double number = 0;   // the comparisons
    };
    // Keywords: any of them (all with `all`) in any value of the event.
    struct Keywords {
        std::vector<ValuePattern> patterns;
        bool all = false;
    };
    // A map of the detection: every test and every keyword list holds.
    struct Alternative {
        std::vector<FieldTest> tests;
        std::vector<Keywords> keywords;
    };
    struct Selection {
        std::vector<Alternative> alternatives;  // any of them (a list of maps; one otherwise)
    };

private:
    bool holds(const Condition& c, const EventView& event) const;
    bool selected(const Selection& s, const EventView& event) const;

    RuleInfo info_;
    std::vector<std::string> fields_;
    std::vector<std::pair<std::string, AuditField>> field_refs_;
    std::map<std::string, Selection> selections_;
    std::shared_ptr<const Condition> condition_;
};

}  // namespace eventd::detection
