// Readiness (PSD-008 §10.1, DESIGN.md §2 "peinit readiness"): eventd sends READY=1 on the
// NOTIFY_SOCKET the test created only after every startup phase succeeded; when a phase
// fails it exits non-zero, says why, and never sends READY=1.
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include "pipeline.hpp"

using namespace eventd::it;

namespace {

// Start eventd with `overrides` and expect it to fail before readiness, naming `mentioned`.
void expect_startup_failure(Pipeline& p, const nlohmann::json& overrides, const std::string& mentioned) {
    p.write_eventd_config(overrides);
    EventdProcess eventd(p.dir(), p.config_path());
    const auto status = eventd.wait_exit(std::chrono::seconds(30));
    const std::string log = eventd.log();
    INFO("eventd log:\n" << log);
    REQUIRE(status);
    CHECK(WIFEXITED(*status));
    CHECK(WEXITSTATUS(*status) != 0);
    CHECK_FALSE(eventd.notified("READY=1"));
    CHECK(log.find(mentioned) != std::string::npos);
}

}  // namespace

TEST_CASE("startup: READY=1 arrives on the test's NOTIFY_SOCKET once the store and the query socket exist",
          "[startup]") {
    Pipeline p({.cpus = 2, .generate = ""});
    EventdProcess& eventd = p.start_eventd();
    CHECK(eventd.notified("READY=1"));
    CHECK(eventd.notified("STATUS="));
    struct stat st {};
    REQUIRE(stat((p.dir() + "/query.sock").c_str(), &st) == 0);
    CHECK(S_ISSOCK(st.st_mode));
    CHECK(shard_files(p.store()) == std::vector<std::string>{"shard-0000.db", "shard-0001.db"});  // 0 = CPU count
}

TEST_CASE("startup: without EventStorePath eventd exits non-zero naming the key, and never signals READY=1",
          "[startup]") {
    Pipeline p({.cpus = 1, .generate = ""});
    expect_startup_failure(p, {{"EventStorePath", nullptr}}, "EventStorePath");
    CHECK_FALSE(std::filesystem::exists(p.store()));
}

TEST_CASE("startup: an EventStorePath that is not a string is refused, naming the key", "[startup]") {
    Pipeline p({.cpus = 1, .generate = ""});
    expect_startup_failure(p, {{"EventStorePath", 42}}, "EventStorePath");
}

TEST_CASE("startup: without QuerySocketPath eventd exits non-zero naming the key", "[startup]") {
    Pipeline p({.cpus = 1, .generate = ""});
    expect_startup_failure(p, {{"QuerySocketPath", nullptr}}, "QuerySocketPath");
}

TEST_CASE("startup: with no kmes-shimd listening eventd exits non-zero and never signals READY=1", "[startup]") {
    Pipeline p({.cpus = 1, .generate = ""});
    const std::string nowhere = p.dir() + "/no-shim.sock";
    expect_startup_failure(p, {{"KmesSocketPath", nowhere}}, nowhere);
}

TEST_CASE("startup: a QuerySocketPath in a directory that cannot exist fails startup before READY=1", "[startup]") {
    Pipeline p({.cpus = 1, .generate = ""});
    // /proc refuses new directories, even to root.
    expect_startup_failure(p, {{"QuerySocketPath", "/proc/eventd-test-missing/query.sock"}},
                           "/proc/eventd-test-missing/query.sock");
}

TEST_CASE("startup: a file that is not a socket at QuerySocketPath is refused and left alone", "[startup]") {
    Pipeline p({.cpus = 1, .generate = ""});
    const std::string path = p.dir() + "/not-a-socket";
    std::ofstream(path) << "keep me";
    expect_startup_failure(p, {{"QuerySocketPath", path}},
                           path + " exists and is not a socket; remove it or set QuerySocketPath");
    std::ifstream in(path);
    std::string content;
    std::getline(in, content);
    CHECK(content == "keep me");
}

TEST_CASE("startup: a second eventd on a query socket a running eventd answers on refuses to start", "[startup]") {
    Pipeline p({.cpus = 1, .generate = ""});
    p.start_eventd();
    // The second instance: its own directory, store and NOTIFY_SOCKET, the first one's query socket.
    const std::string second_dir = p.dir() + "/second";
    std::filesystem::create_directories(second_dir);
    nlohmann::json config;
    std::ifstream(p.config_path()) >> config;
    config["EventStorePath"] = second_dir + "/events";
    const std::string second_config = second_dir + "/eventd.json";
    std::ofstream(second_config) << config.dump(2);

    EventdProcess second(second_dir, second_config);
    const auto status = second.wait_exit(std::chrono::seconds(30));
    INFO("second eventd log:\n" << second.log());
    REQUIRE(status);
    CHECK(WEXITSTATUS(*status) != 0);
    CHECK_FALSE(second.notified("READY=1"));
    CHECK(second.log().find("another eventd is already listening on " + p.dir() + "/query.sock") != std::string::npos);
    // The first one still owns its socket.
    struct stat st {};
    CHECK(stat((p.dir() + "/query.sock").c_str(), &st) == 0);
}

// Issue 39 part 1 (docs/OPERATIONS.md "Files written as root"): eventd run as root makes no file
// where another user can plant links.
TEST_CASE("startup: as root, a store directory others can write is refused, naming its mode", "[startup]") {
    Pipeline p({.cpus = 1, .generate = ""});
    std::filesystem::create_directories(p.store());
    REQUIRE(::chmod(p.store().c_str(), 0777) == 0);
    expect_startup_failure(p, {},
                           "EventStorePath " + p.store() + " can be written by others than its owner (mode 0777");
    CHECK(shard_files(p.store()).empty());
}

TEST_CASE("startup: as root, a store directory of another user is refused; a shard name it planted is not opened",
          "[startup]") {
    Pipeline p({.cpus = 1, .generate = ""});
    const struct passwd* nobody = ::getpwnam("nobody");
    REQUIRE(nobody);
    std::filesystem::create_directories(p.store());
    REQUIRE(::chmod(p.store().c_str(), 0750) == 0);
    REQUIRE(::chown(p.store().c_str(), nobody->pw_uid, nobody->pw_gid) == 0);
    // An empty file of root's, which SQLite would take for a new database and write.
    const std::string victim = p.dir() + "/victim.db";
    std::ofstream{victim};
    const std::string planted = p.store() + "/shard-0000.db";
    const std::string command = "setpriv --reuid=" + std::to_string(nobody->pw_uid) +
                                " --regid=" + std::to_string(nobody->pw_gid) + " --clear-groups ln -s " + victim + " " +
                                planted;
    REQUIRE(std::system(command.c_str()) == 0);
    expect_startup_failure(p, {}, "EventStorePath " + p.store() + " belongs to uid " + std::to_string(nobody->pw_uid));
    CHECK(std::filesystem::file_size(victim) == 0);
}
