// Loading DetectionRulesPath; see rule_set.hpp.
#include "eventd/detect/rule_set.hpp"

#include <map>

#include "detection/rule_files.hpp"

namespace eventd::detect {

namespace fs = std::filesystem;

RuleSet load_rules(const fs::path& dir) {
    RuleSet set;
    std::error_code ec;
    if (!fs::exists(dir, ec)) return set;
    auto files = detection::rule_files(dir);
    if (!files) {
        set.refused.push_back({"", files.error().message});
        return set;
    }
    std::map<std::string, std::string> file_of_id;
    for (const fs::path& path : *files) {
        const std::string name = fs::relative(path, dir, ec).string();
        auto text = detection::read_rule_file(path);
        if (!text) {
            set.refused.push_back({name, "cannot be read"});
            continue;
        }
        auto rule = detection::SigmaRule::compile(*text);
        if (!rule) {
            set.refused.push_back({name, rule.error().message});
            continue;
        }
        const auto [it, fresh] = file_of_id.emplace(rule->info().id, name);
        if (!fresh) {
            set.refused.push_back({name, "id " + rule->info().id + " is also the id of " + it->second});
            continue;
        }
        set.rules.push_back({name, std::move(*rule)});
    }
    return set;
}

}  // namespace eventd::detect
