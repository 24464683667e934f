// Loading DetectionRulesPath; see rule_set.hpp.
#include "eventd/detect/rule_set.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

namespace eventd::detect {

namespace fs = std::filesystem;

RuleSet load_rules(const fs::path& dir) {
    RuleSet set;
    std::error_code ec;
    if (!fs::exists(dir, ec)) return set;
    std::vector<fs::path> files;
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
        const auto ext = it->path().extension();
        if (it->is_regular_file() && (ext == ".yml" || ext == ".yaml")) files.push_back(it->path());
    }
    if (ec) {
        set.refused.push_back({"", "cannot read the directory " + dir.string() + ": " + ec.message()});
        return set;
    }
    std::sort(files.begin(), files.end());
    std::map<std::string, std::string> file_of_id;
    for (const fs::path& path : files) {
        const std::string name = fs::relative(path, dir, ec).string();
        std::ifstream in(path, std::ios::binary);
        std::stringstream text;
        text << in.rdbuf();
        if (!in) {
            set.refused.push_back({name, "cannot be read"});
            continue;
        }
        auto rule = detection::SigmaRule::compile(text.str());
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
