// The daemons' log lines (base/daemon_log.hpp): with stderr on the journal (JOURNAL_STREAM names
// its device and inode) each line starts with sd-daemon's priority prefix, so that
// `journalctl -p warning` finds warnings; elsewhere "TIME LEVEL message".
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "base/daemon_log.hpp"

namespace {

// What one warning looks like on stderr, JOURNAL_STREAM set to stderr's own identity or not.
std::string warning_line(bool journal) {
    char path[] = "/tmp/daemon-log-test.XXXXXX";
    const int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    const int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    struct stat st{};
    fstat(fd, &st);
    if (journal)
        setenv("JOURNAL_STREAM", (std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino)).c_str(), 1);
    else
        unsetenv("JOURNAL_STREAM");
    spdlog::drop("daemon-log-test");
    base::set_up_daemon_log("daemon-log-test");
    spdlog::warn("the disk is nearly full");
    spdlog::default_logger()->flush();
    dup2(saved, STDERR_FILENO);
    close(saved);
    close(fd);
    unsetenv("JOURNAL_STREAM");
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    unlink(path);
    spdlog::drop("daemon-log-test");
    spdlog::set_default_logger(spdlog::stderr_color_mt("unit"));
    return line;
}

}  // namespace

TEST_CASE("on the journal, a warning carries sd-daemon's priority 4 and no timestamp of its own", "[daemon_log]") {
    CHECK(warning_line(true) == "<4>warning the disk is nearly full");
}

TEST_CASE("elsewhere a line is time, level, message", "[daemon_log]") {
    const std::string line = warning_line(false);
    CHECK(line.size() > 24);
    CHECK(line.substr(4, 1) == "-");  // 2026-11-26T…
    CHECK(line.find(" warning the disk is nearly full") != std::string::npos);
    CHECK(line.find("<4>") == std::string::npos);
}
