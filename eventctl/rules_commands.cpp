// `eventctl rules check`: see rules_commands.hpp.
#include "rules_commands.hpp"

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/cli.hpp"
#include "base/display_escape.hpp"
#include "base/interrupt.hpp"
#include "detection/rule_files.hpp"
#include "detection/sigma_rule.hpp"
#include "fetch_records.hpp"
#include "help_text.hpp"
#include "session.hpp"

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

// The rule files `args` name: files as given, directories' *.yml and *.yaml below them, sorted.
bool collect(const std::vector<std::string>& args, std::vector<fs::path>& files, std::string& error) {
    for (const std::string& arg : args) {
        std::error_code ec;
        if (fs::is_directory(arg, ec)) {
            auto found = eventd::detection::rule_files(arg);
            if (!found) {
                error = base::display_escaped(found.error().message);
                return false;
            }
            files.insert(files.end(), found->begin(), found->end());
        } else if (fs::exists(arg, ec)) {
            files.emplace_back(arg);
        } else {
            error = "no such file or directory: " + base::display_escaped(arg);
            return false;
        }
    }
    return true;
}

// `rules list`: the {kind:"detection"} record of eventd's STATUS (administrators).
int list_rules(const std::string& socket) {
    if (!base::install_interrupt_handlers()) {
        std::fprintf(stderr, "eventctl rules: cannot set up Ctrl-C handling\n");
        return kExitUsage;
    }
    auto records = fetch_records(socket, "STATUS");
    if (!records) {
        std::fprintf(stderr, "eventctl rules: %s\n", base::display_escaped(records.error().message).c_str());
        return kExitRefused;
    }
    for (const auto& bytes : *records) {
        const auto r = nlohmann::json::from_msgpack(bytes.begin(), bytes.end(), true, false);
        if (!r.is_object() || r.value("kind", "") != "detection") continue;
        auto text = [](const nlohmann::json& v) {
            return base::display_escaped(v.is_string() ? v.get<std::string>() : v.dump());
        };
        std::printf("%-8s %-13s %-36s %s\n", "MATCHES", "LEVEL", "ID", "FILE  TITLE");
        for (const auto& rule : r.value("rules", nlohmann::json::array()))
            std::printf("%-8s %-13s %-36s %s  %s\n", text(rule.value("matches", nlohmann::json(0))).c_str(),
                        text(rule.value("level", nlohmann::json(""))).c_str(),
                        text(rule.value("id", nlohmann::json(""))).c_str(),
                        text(rule.value("file", nlohmann::json(""))).c_str(),
                        text(rule.value("title", nlohmann::json(""))).c_str());
        for (const auto& refused : r.value("refused", nlohmann::json::array()))
            std::printf("refused  %s  %s\n", text(refused.value("file", nlohmann::json(""))).c_str(),
                        text(refused.value("reason", nlohmann::json(""))).c_str());
        std::printf("%s rule(s) loaded, %s refused; %s event(s) evaluated since eventd started\n",
                    text(r.value("rules_loaded", nlohmann::json(0))).c_str(),
                    text(r.value("rules_refused", nlohmann::json(0))).c_str(),
                    text(r.value("evaluated", nlohmann::json(0))).c_str());
        return kExitAllCompile;
    }
    std::printf("eventd evaluates no rules (DetectionRulesPath holds none, or eventd is a collector)\n");
    return kExitAllCompile;
}

}  // namespace

int run_rules_command(int argc, const char* const* argv) {
    base::cli::App app{
        "eventctl rules check FILE|DIR… — compile Sigma rules as eventd does (docs/DETECTION.md),\n"
        "without eventd: for each rule file, `ok` with its id, level and title, or why it is refused\n"
        "(`invalid: …` for a mistake in the rule, `unsupported: …` for what eventd does not evaluate).\n"
        "A directory is read for *.yml and *.yaml below it. A rule is loaded whole or not at all.\n"
        "Exit 0: every rule compiles; 1: one or more is refused; 2: usage, or a file cannot be read.\n"
        "eventctl rules list — the rules eventd evaluates, each with its matches since eventd started,\n"
        "and the refused files with their reasons (eventd's STATUS: administrators). Exit 1 when\n"
        "eventd cannot be asked.",
        "eventctl rules"};
    std::string action, socket_arg;
    std::vector<std::string> paths;
    app.add_option("ACTION", action, "check or list")->required()->check_member({"check", "list"});
    app.add_option("FILE", paths, "check: rule files, or directories of them");
    auto* socket_opt =
        app.add_option("-s,--socket", socket_arg,
                       "list: eventd's query socket; default $EVENTD_SOCKET, else " EVENTCTL_DEFAULT_SOCKET)
            ->type_name("PATH");
    const auto parsed = app.parse(argc, argv);
    if (!parsed.go_on) return parsed.error.empty() ? parsed.exit_code : usage_error(parsed.error);
    if (action == "list") {
        if (!paths.empty()) return usage_error("list takes no files (it asks eventd)");
        return list_rules(socket_path(socket_opt->count() ? std::optional<std::string>(socket_arg) : std::nullopt));
    }
    if (socket_opt->count()) return usage_error("--socket is for list");
    if (paths.empty()) return usage_error("check needs rule files or directories");
    std::vector<fs::path> files;
    std::string error;
    if (!collect(paths, files, error)) return usage_error(error);
    if (files.empty()) return usage_error("no rule files (*.yml, *.yaml) in what was given");
    size_t compiled = 0, refused = 0;
    for (const fs::path& file : files) {
        const std::string name = base::display_escaped(file.string());
        auto text = eventd::detection::read_rule_file(file);
        if (!text) {
            std::fprintf(stderr, "eventctl rules: %s\n", base::display_escaped(text.error().message).c_str());
            return kExitUsage;
        }
        auto rule = eventd::detection::SigmaRule::compile(*text);
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
