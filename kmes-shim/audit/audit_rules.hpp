// The audit rules the shim loads in daemon mode, and their exact undo (issue 24; docs/AUDIT.md
// "Rules"). A rules file in auditctl's syntax, the subset the anchors use: `-a`/`-A` (add a
// syscall rule), `-w` (a watch), each with `-F`, `-S`, `-p`, `-k`; `-D`; `-b` and
// `--backlog_wait_time` (settings, taken over by the source's own keys); comments and blank
// lines. Each rule is loaded by running `auditctl` with that line's arguments — auditctl is
// the reference parser of its own syntax (Debian package auditd) — and its inverse (`-d`
// for `-a`/`-A`, `-W` for `-w`) is remembered, so that exactly the rules the shim added are
// removed at exit. `-D` (delete every rule, the first line of most audit.rules files) is
// honoured as auditd's users expect, and undone too: the rules loaded before are listed
// (`auditctl -l`) and kept in the undo list, so that the shim puts them back, in their order,
// when it stops. `-e` is refused: the shim enables audit itself and never locks the rules.
//
// The undo list is also written to a file (the shim's runtime directory) before any rule is
// added, so that a shim killed with SIGKILL is cleaned up after by the next start.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "base/result.hpp"

namespace kmes::audit {

struct RuleLine {
    int line = 0;                   // in the file, for messages
    std::vector<std::string> args;  // auditctl's arguments, e.g. {"-a", "always,exit", "-F", …}
};

struct RulesFile {
    bool delete_existing = false;  // -D (only before the first rule)
    std::vector<RuleLine> rules;
    std::optional<uint32_t> backlog_limit;      // -b N
    std::optional<uint32_t> backlog_wait_time;  // --backlog_wait_time N
};

// Parse `text` (the contents of `name`). Errors name the file, the line and what is wrong.
base::Result<RulesFile> parse_rules(const std::string& text, const std::string& name);

// The arguments that remove the rule `args` adds.
std::vector<std::string> inverse_rule(const std::vector<std::string>& args);

// Run auditctl with `args`; its stderr in the error. `out`: its stdout, when wanted.
base::Status run_auditctl(const std::vector<std::string>& args, std::string* out = nullptr);

// Rules loaded by this process, removed (in reverse order) by remove_all() or the destructor.
class LoadedRules {
public:
    // `undo_file`: where the undo list is kept on disk while rules are loaded.
    explicit LoadedRules(std::filesystem::path undo_file) : undo_file_(std::move(undo_file)) {}
    ~LoadedRules() { remove_all(); }
    LoadedRules(const LoadedRules&) = delete;
    LoadedRules& operator=(const LoadedRules&) = delete;

    // Add one rule (its undo is on disk before auditctl runs).
    base::Status add(const std::vector<std::string>& args);
    // `-D`: delete every rule in the kernel, each one's re-addition kept in the undo list (on
    // disk before the rules go). Returns how many there were.
    base::Result<size_t> delete_existing();
    void remove_all();
    // Rules added (the rules -D deleted, kept for putting back, are not counted).
    size_t size() const { return undo_.size() - kept_for_restore_; }

    // Undo what a previous shim left in `undo_file` (it died without cleaning up); returns how
    // many rules were removed. A missing file: 0.
    static size_t undo_leftovers(const std::filesystem::path& undo_file);

private:
    base::Status save() const;

    std::filesystem::path undo_file_;
    std::vector<std::vector<std::string>> undo_;
    size_t kept_for_restore_ = 0;
};

}  // namespace kmes::audit
