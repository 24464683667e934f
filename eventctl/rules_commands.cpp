// `eventctl rules check`: see rules_commands.hpp.
#include "rules_commands.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/cli.hpp"
#include "base/display_escape.hpp"
#include "detection/sigma_rule.hpp"

namespace eventctl {
namespace {

namespace fs = std::filesystem;

constexpr int kExitAllCompile = 0;
constexpr int kExitRefused = 1;
constexpr int kExitUsage = 2;

int usage_error(const std::string& message) {
    std::fprintf(stderr, "eventctl rules: %s\nRun 'eventctl rules --help' for the options.\n", message.c_str());
    return kExitUsage;
}

bool is_rule_file(const fs::path& p) { return p.extension() == ".yml" || p.extension() == ".yaml"; }

// The rule files `args` name: files as given, directories' *.yml and *.yaml below them, sorted.
bool collect(const std::vector<std::string>& args, std::vector<fs::path>& files, std::string& error) {
    for (const std::string& arg : args) {
        std::error_code ec;
        if (fs::is_directory(arg, ec)) {
            std::vector<fs::path> found;
            for (auto it = fs::recursive_directory_iterator(arg, ec); !ec && it != fs::recursive_directory_iterator();
                 it.increment(ec))
                if (it->is_regular_file() && is_rule_file(it->path())) found.push_back(it->path());
            if (ec) {
                error = "cannot read the directory " + base::display_escaped(arg) + ": " + ec.message();
                return false;
            }
            std::sort(found.begin(), found.end());
            files.insert(files.end(), found.begin(), found.end());
        } else if (fs::exists(arg, ec)) {
            files.emplace_back(arg);
        } else {
            error = "no such file or directory: " + base::display_escaped(arg);
            return false;
        }
    }
    return true;
}

}  // namespace

int run_rules_command(int argc, const char* const* argv) {
    base::cli::App app{
        "eventctl rules check FILE|DIR… — compile Sigma rules as eventd does (docs/DETECTION.md),\n"
        "without eventd: for each rule file, `ok` with its id, level and title, or why it is refused\n"
        "(`invalid: …` for a mistake in the rule, `unsupported: …` for what eventd does not evaluate).\n"
        "A directory is read for *.yml and *.yaml below it. A rule is loaded whole or not at all.\n"
        "Exit 0: every rule compiles; 1: one or more is refused; 2: usage, or a file cannot be read.",
        "eventctl rules"};
    std::string action;
    std::vector<std::string> paths;
    app.add_option("ACTION", action, "check")->required()->check_member({"check"});
    app.add_option("FILE", paths, "rule files, or directories of them")->required();
    const auto parsed = app.parse(argc, argv);
    if (!parsed.go_on) return parsed.error.empty() ? parsed.exit_code : usage_error(parsed.error);
    std::vector<fs::path> files;
    std::string error;
    if (!collect(paths, files, error)) return usage_error(error);
    if (files.empty()) return usage_error("no rule files (*.yml, *.yaml) in what was given");
    size_t compiled = 0, refused = 0;
    for (const fs::path& file : files) {
        std::ifstream in(file, std::ios::binary);
        std::stringstream text;
        text << in.rdbuf();
        const std::string name = base::display_escaped(file.string());
        if (!in) {
            std::fprintf(stderr, "eventctl rules: cannot read %s\n", name.c_str());
            return kExitUsage;
        }
        auto rule = eventd::detection::SigmaRule::compile(text.str());
        if (rule) {
            ++compiled;
            const auto& info = rule->info();
            std::printf("ok           %s  %s  %s  %s\n", name.c_str(), base::display_escaped(info.id).c_str(),
                        info.level.c_str(), base::display_escaped(info.title).c_str());
        } else {
            ++refused;
            const bool unsupported = rule.error().code == base::ErrorCode::not_supported;
            std::printf("%-12s %s  %s\n", unsupported ? "unsupported:" : "invalid:", name.c_str(),
                        base::display_escaped(rule.error().message).c_str());
        }
    }
    std::printf("%zu rule file(s): %zu compile, %zu refused\n", files.size(), compiled, refused);
    return refused == 0 ? kExitAllCompile : kExitRefused;
}

}  // namespace eventctl
