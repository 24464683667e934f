// Where rules are found (docs/DETECTION.md): every *.yml and *.yaml below a directory, in file-
// name order — the order eventd evaluates them in. One listing for eventd's DetectionRulesPath,
// `eventctl rules check DIR` and the benchmark, so that all three see the same rules.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "base/result.hpp"

namespace eventd::detection {

bool is_rule_file(const std::filesystem::path& path);

// The rule files below `dir`, sorted. Errors: the directory cannot be read (its message names it).
base::Result<std::vector<std::filesystem::path>> rule_files(const std::filesystem::path& dir);

// The text of one rule file; an error names the file.
base::Result<std::string> read_rule_file(const std::filesystem::path& path);

}  // namespace eventd::detection
