#include "audit_rules.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/durable_file.hpp"

extern char** environ;

namespace kmes::audit {
namespace {

constexpr const char* kAuditctl = "/usr/sbin/auditctl";

std::vector<std::string> split_words(const std::string& line) {
    std::vector<std::string> words;
    std::istringstream in(line);
    for (std::string w; in >> w;) {
        // -k "key" and -F "path=…" are written quoted by some files: auditctl gets them bare.
        if (w.size() >= 2 && w.front() == '"' && w.back() == '"') w = w.substr(1, w.size() - 2);
        words.push_back(std::move(w));
    }
    return words;
}

std::optional<uint32_t> number(const std::string& text) {
    if (text.empty() || text.size() > 10) return std::nullopt;
    uint64_t v = 0;
    for (char c : text) {
        if (c < '0' || c > '9') return std::nullopt;
        v = v * 10 + uint64_t(c - '0');
    }
    if (v > UINT32_MAX) return std::nullopt;
    return static_cast<uint32_t>(v);
}

}  // namespace

base::Result<RulesFile> parse_rules(const std::string& text, const std::string& name) {
    RulesFile out;
    std::istringstream in(text);
    int n = 0;
    for (std::string line; std::getline(in, line);) {
        ++n;
        const auto hash = line.find('#');
        if (hash != std::string::npos) line.erase(hash);
        std::vector<std::string> words = split_words(line);
        if (words.empty()) continue;
        auto fail = [&](const std::string& why) {
            return base::Error{EINVAL, name + " line " + std::to_string(n) + ": " + why};
        };
        const std::string& op = words[0];
        if (op == "-b" || op == "--backlog_wait_time") {
            const auto v = words.size() == 2 ? number(words[1]) : std::nullopt;
            if (!v) return fail("'" + op + "' takes one number");
            (op == "-b" ? out.backlog_limit : out.backlog_wait_time) = *v;
            continue;
        }
        if (op == "-D") {
            if (words.size() != 1) return fail("'-D' takes no argument (the shim deletes rules of every list)");
            if (!out.rules.empty()) return fail("'-D' must come before the first rule (it would delete the file's own)");
            out.delete_existing = true;
            continue;
        }
        if (op == "-e") return fail("'-e' is not accepted: the shim enables audit itself and never locks the rules");
        if (op != "-a" && op != "-A" && op != "-w")
            return fail("'" + op +
                        "' is not a rule; accepted: -a, -A, -w (with -F, -S, -p, -k), -b, --backlog_wait_time");
        if (words.size() < 2) return fail("'" + op + "' needs an argument");
        out.rules.push_back(RuleLine{n, std::move(words)});
    }
    return out;
}

std::vector<std::string> inverse_rule(const std::vector<std::string>& args) {
    std::vector<std::string> undo = args;
    if (undo.empty()) return undo;
    if (undo[0] == "-a" || undo[0] == "-A") undo[0] = "-d";
    if (undo[0] == "-w") undo[0] = "-W";
    return undo;
}

namespace {

// Everything `fd` yields until end of file.
std::string read_all(int fd) {
    std::string text;
    char buffer[4096];
    for (ssize_t got; (got = read(fd, buffer, sizeof buffer)) != 0;) {
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) break;
        text.append(buffer, static_cast<size_t>(got));
    }
    return text;
}

}  // namespace

base::Status run_auditctl(const std::vector<std::string>& args, std::string* out) {
    // stdout goes to a temporary file when wanted (read after exit: no two pipes to juggle).
    FILE* stdout_file = out ? tmpfile() : nullptr;
    if (out && !stdout_file) return base::errno_error("temporary file for auditctl's output");
    int err[2];
    if (pipe2(err, O_CLOEXEC) != 0) {
        if (stdout_file) fclose(stdout_file);
        return base::errno_error("pipe for auditctl");
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
    if (stdout_file) {
        posix_spawn_file_actions_adddup2(&actions, fileno(stdout_file), STDOUT_FILENO);
    } else {
        posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    }
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(kAuditctl));
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, kAuditctl, &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(err[1]);
    if (rc != 0) {
        close(err[0]);
        if (stdout_file) fclose(stdout_file);
        return base::Error{rc, std::string("cannot run ") + kAuditctl + " (package auditd): " + strerror(rc)};
    }
    std::string message = read_all(err[0]);
    close(err[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (stdout_file) {
        rewind(stdout_file);
        *out = read_all(fileno(stdout_file));
        fclose(stdout_file);
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return {};
    std::string line;
    for (const std::string& a : args) line += (line.empty() ? "" : " ") + a;
    while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
    return base::Error{EINVAL, "auditctl " + line + ": " + (message.empty() ? "failed" : message)};
}

base::Status LoadedRules::save() const {
    std::string text;
    for (const auto& undo : undo_) {
        for (size_t i = 0; i < undo.size(); ++i) text += (i ? " " : "") + undo[i];
        text += '\n';
    }
    return base::write_file_atomically(undo_file_, text, 0600);
}

base::Status LoadedRules::add(const std::vector<std::string>& args) {
    // Undo first: a crash between the two leaves at worst an undo for a rule never added
    // (auditctl then says "No rule matches" and the leftover cleanup goes on).
    undo_.push_back(inverse_rule(args));
    if (base::Status s = save(); !s) {
        undo_.pop_back();
        return s;
    }
    if (base::Status s = run_auditctl(args); !s) {
        undo_.pop_back();
        (void)save();
        return s;
    }
    return {};
}

base::Result<size_t> LoadedRules::delete_existing() {
    std::string listing;
    if (base::Status s = run_auditctl({"-l"}, &listing); !s) return s.error();
    std::vector<std::vector<std::string>> existing;
    std::istringstream in(listing);
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line == "No rules") continue;
        existing.push_back(split_words(line));
    }
    // The undo list runs backwards: pushed last to first, the rules come back first to last
    // (their order matters: the first matching rule decides), after the shim's own are gone.
    for (auto it = existing.rbegin(); it != existing.rend(); ++it) undo_.push_back(*it);
    if (base::Status s = save(); !s) {
        undo_.resize(undo_.size() - existing.size());
        return s.error();
    }
    kept_for_restore_ += existing.size();
    if (base::Status s = run_auditctl({"-D"}); !s) return s.error();
    return existing.size();
}

void LoadedRules::remove_all() {
    while (!undo_.empty()) {
        (void)run_auditctl(undo_.back());  // a rule someone else removed meanwhile: nothing to do
        undo_.pop_back();
    }
    kept_for_restore_ = 0;
    std::error_code ec;
    std::filesystem::remove(undo_file_, ec);
}

size_t LoadedRules::undo_leftovers(const std::filesystem::path& undo_file) {
    std::ifstream in(undo_file);
    if (!in) return 0;
    std::vector<std::vector<std::string>> lines;
    for (std::string line; std::getline(in, line);) {
        auto words = split_words(line);
        if (!words.empty()) lines.push_back(std::move(words));
    }
    size_t removed = 0;
    for (auto it = lines.rbegin(); it != lines.rend(); ++it)
        if (run_auditctl(*it)) ++removed;
    std::error_code ec;
    std::filesystem::remove(undo_file, ec);
    return removed;
}

}  // namespace kmes::audit
