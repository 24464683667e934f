// The daemons' log (kmes-shimd, eventd, eventd-forward): one line per message on stderr.
//
// Under systemd, stderr goes to the journal, which gives every line it reads there priority
// "info" unless the line starts with an sd-daemon prefix ("<3>" for an error, sd-daemon(3)).
// Without the prefix `journalctl -p warning -u eventd` would show none of eventd's warnings and
// errors — found by scripts/package-test-systemd, whose journal check passed vacuously. So when
// systemd says stderr is the journal (JOURNAL_STREAM, systemd.exec(5)), each line starts with
// its level's prefix and carries no timestamp of its own (the journal has one); elsewhere (a
// terminal, scripts/run, the tests' log files) lines are "TIME LEVEL message".
// Header-only: base/ is linked into libkmes, which must not carry spdlog.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <memory>
#include <string>

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace base {

// sd-daemon's priority prefix of a message's level: "<2>" … "<7>".
class JournalPriorityFlag : public spdlog::custom_flag_formatter {
public:
    void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
        static constexpr const char* kPrefix[] = {"<7>", "<7>", "<6>", "<4>", "<3>", "<2>", "<6>"};
        const auto level = static_cast<size_t>(msg.level);
        const char* prefix = level < std::size(kPrefix) ? kPrefix[level] : "<6>";
        dest.append(prefix, prefix + 3);
    }
    std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<JournalPriorityFlag>(); }
};

// True when stderr is systemd's journal stream: its device:inode is JOURNAL_STREAM's (a child
// that inherits the variable but not the stream is not fooled). Under systemd stdout is the same
// stream unless a unit says otherwise (StandardError=inherit).
inline bool stderr_is_journal() {
    const char* stream = std::getenv("JOURNAL_STREAM");
    if (!stream) return false;
    unsigned long long device = 0, inode = 0;
    if (std::sscanf(stream, "%llu:%llu", &device, &inode) != 2) return false;
    struct stat st{};
    if (fstat(STDERR_FILENO, &st) != 0) return false;
    return static_cast<unsigned long long>(st.st_dev) == device && static_cast<unsigned long long>(st.st_ino) == inode;
}

// The formatter of the daemons' lines (see the top of this file).
inline std::unique_ptr<spdlog::formatter> daemon_log_formatter() {
    auto formatter = std::make_unique<spdlog::pattern_formatter>();
    if (stderr_is_journal()) {
        formatter->add_flag<JournalPriorityFlag>('*').set_pattern("%*%l %v");
    } else {
        formatter->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
    }
    return formatter;
}

// The default logger: stderr, named `name`, with the formatter above.
inline void set_up_daemon_log(const std::string& name) {
    spdlog::set_default_logger(spdlog::stderr_color_mt(name));
    spdlog::set_formatter(daemon_log_formatter());
}

}  // namespace base
