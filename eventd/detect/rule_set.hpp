// The Sigma rules of DetectionRulesPath (issue 41; docs/DETECTION.md): every *.yml and *.yaml
// below the directory, each compiled whole or refused whole with its reason (detection/).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "detection/sigma_rule.hpp"

namespace eventd::detect {

struct LoadedRule {
    std::string file;  // relative to the rules directory
    detection::SigmaRule rule;
};

struct RefusedRule {
    std::string file;
    std::string reason;  // the compiler's, or why the file could not be read
};

struct RuleSet {
    std::vector<LoadedRule> rules;  // in file-name order: the order rules are evaluated in
    std::vector<RefusedRule> refused;
};

// Reads `dir`. A directory that does not exist holds no rules (the default, /etc/eventd/rules.d,
// may be absent); one that cannot be read is refused as a whole (one RefusedRule, file "").
// Two rules with one id: the second is refused (an alert's rule_id must name one rule).
RuleSet load_rules(const std::filesystem::path& dir);

}  // namespace eventd::detect
