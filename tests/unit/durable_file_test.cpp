// The one primitive for files created or replaced (base/durable_file.hpp; issue 39 "Files as
// root, safely"), run as root against links planted by a real other user (`nobody`, in a forked
// child that drops to it) in a sticky directory everyone can write, as /tmp is: nothing planted
// is followed or opened, ownership is given on the descriptor, and a directory fsync that fails
// is reported (the fsync made to fail for real, by a seccomp filter in a child).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <grp.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pwd.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "base/durable_file.hpp"

namespace durable_file_test {
namespace fs = std::filesystem;

const struct passwd& nobody() {
    static const struct passwd* pw = ::getpwnam("nobody");
    REQUIRE(pw != nullptr);
    return *pw;
}

// A fresh directory under /tmp with `mode` (1777: shared and sticky, as /tmp is).
fs::path make_dir(mode_t mode) {
    char pattern[] = "/tmp/durable-file-test-XXXXXX";
    REQUIRE(::mkdtemp(pattern) != nullptr);
    REQUIRE(::chmod(pattern, mode) == 0);
    return pattern;
}

std::string content_of(const fs::path& path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

void write_plain(const fs::path& path, const std::string& text) {
    std::ofstream out(path);
    out << text;
    REQUIRE(out.good());
}

// Run `step` in a child as the real user nobody; true when it returned true.
bool as_nobody(const std::function<bool()>& step) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        const bool dropped =
            ::setgroups(0, nullptr) == 0 && ::setgid(nobody().pw_gid) == 0 && ::setuid(nobody().pw_uid) == 0;
        ::_exit(dropped && step() ? 0 : 1);
    }
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

struct Planted {
    fs::path dir = make_dir(01777);        // shared and sticky, like /tmp
    fs::path victim_dir = make_dir(0755);  // root's, outside it
    fs::path victim = victim_dir / "victim";
    Planted() {
        write_plain(victim, "victim\n");
        REQUIRE(::chmod(victim.c_str(), 0644) == 0);
    }
    ~Planted() {
        std::error_code ec;
        fs::remove_all(dir, ec);
        fs::remove_all(victim_dir, ec);
    }
    // nobody makes dir/name a symbolic link to the victim.
    void plant_link(const std::string& name) const {
        const fs::path at = dir / name;
        REQUIRE(as_nobody([&] { return ::symlink(victim.c_str(), at.c_str()) == 0; }));
        struct stat st {};
        REQUIRE(::lstat(at.c_str(), &st) == 0);
        REQUIRE(S_ISLNK(st.st_mode));
        REQUIRE(st.st_uid == nobody().pw_uid);
    }
    void check_victim_untouched() const {
        CHECK(content_of(victim) == "victim\n");
        struct stat st {};
        REQUIRE(::stat(victim.c_str(), &st) == 0);
        CHECK(st.st_uid == 0);
        CHECK((st.st_mode & 07777) == 0644);
    }
};

bool is_plain_file(const fs::path& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace durable_file_test

using namespace durable_file_test;

TEST_CASE("a temporary name another user planted as a link is removed, never followed") {
    Planted p;
    p.plant_link("cursor.tmp");
    const auto written = base::write_file_atomically(p.dir / "cursor", "new\n", 0600);
    INFO((written ? std::string() : written.error().message));
    REQUIRE(written);
    p.check_victim_untouched();
    CHECK(is_plain_file(p.dir / "cursor"));
    CHECK(content_of(p.dir / "cursor") == "new\n");
    CHECK_FALSE(fs::exists(fs::symlink_status(p.dir / "cursor.tmp")));
}

TEST_CASE("a link another user planted at the file's name is replaced, not written through") {
    Planted p;
    p.plant_link("cursor");
    REQUIRE(base::write_file_atomically(p.dir / "cursor", "new\n", 0600));
    p.check_victim_untouched();
    CHECK(is_plain_file(p.dir / "cursor"));
    CHECK(content_of(p.dir / "cursor") == "new\n");
}

TEST_CASE("the two-step replacement never follows a planted temporary either") {
    Planted p;
    p.plant_link("cursor.tmp");
    REQUIRE(base::write_beside(p.dir / "cursor", "new\n"));
    p.check_victim_untouched();
    REQUIRE(base::replace_with_beside(p.dir / "cursor"));
    p.check_victim_untouched();
    CHECK(content_of(p.dir / "cursor") == "new\n");
}

TEST_CASE("a crash's leftover temporary is replaced") {
    const fs::path dir = make_dir(0700);
    write_plain(dir / "state.tmp", "half a write");
    REQUIRE(base::write_file_atomically(dir / "state", "whole\n"));
    CHECK(content_of(dir / "state") == "whole\n");
    CHECK_FALSE(fs::exists(dir / "state.tmp"));
    fs::remove_all(dir);
}

TEST_CASE("a new file is given to its owner on the descriptor, private from its first byte") {
    const fs::path dir = make_dir(0755);
    const base::NewFile file{0600, base::FileOwner{nobody().pw_uid, nobody().pw_gid}};
    REQUIRE(base::write_file_atomically(dir / "sealing.key", "secret\n", file));
    struct stat st {};
    REQUIRE(::lstat((dir / "sealing.key").c_str(), &st) == 0);
    CHECK(st.st_uid == nobody().pw_uid);
    CHECK(st.st_gid == nobody().pw_gid);
    CHECK((st.st_mode & 07777) == 0600);
    // Its owner can read it (it is eventd's user's key).
    const fs::path key = dir / "sealing.key";
    CHECK(as_nobody([&] { return ::access(key.c_str(), R_OK) == 0; }));
    fs::remove_all(dir);
}

TEST_CASE("a directory fsync that fails is an error, not a silent success") {
    const fs::path dir = make_dir(0700);
    REQUIRE(base::write_beside(dir / "cursor", "new\n"));
    int pipe_fds[2];
    REQUIRE(::pipe(pipe_fds) == 0);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        // From here every fsync fails with EIO, as on a failing disk.
        struct sock_filter filter[] = {
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_fsync, 0, 1),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EIO & SECCOMP_RET_DATA)),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog program = {static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
        if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
            ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0)
            ::_exit(2);
        const auto replaced = base::replace_with_beside(dir / "cursor");
        const std::string message = replaced ? std::string() : replaced.error().message;
        (void)!::write(pipe_fds[1], message.data(), message.size());
        ::_exit(replaced ? 0 : 1);
    }
    ::close(pipe_fds[1]);
    std::string message;
    char chunk[512];
    for (ssize_t n; (n = ::read(pipe_fds[0], chunk, sizeof chunk)) > 0;) message.append(chunk, size_t(n));
    ::close(pipe_fds[0]);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status));
    INFO(message);
    CHECK(WEXITSTATUS(status) == 1);
    CHECK_THAT(message, Catch::Contains("cannot fsync the directory " + dir.string()));
    // The rename itself happened: the error says it may not survive a crash.
    CHECK(content_of(dir / "cursor") == "new\n");
    fs::remove_all(dir);
}

TEST_CASE("a file read back is never read through a link nor taken from another user in a sticky directory") {
    Planted p;
    SECTION("missing: nothing to read") {
        auto opened = base::open_own_file_to_read(p.dir / "cursor");
        REQUIRE(opened);
        CHECK_FALSE(*opened);
    }
    SECTION("a link at its name") {
        p.plant_link("cursor");
        auto opened = base::open_own_file_to_read(p.dir / "cursor");
        REQUIRE_FALSE(opened);
        CHECK_THAT(opened.error().message, Catch::Contains("is a symbolic link"));
    }
    SECTION("another user's file in a sticky directory") {
        const fs::path at = p.dir / "cursor";
        REQUIRE(as_nobody([&] {
            const int fd = ::open(at.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
            return fd >= 0 && ::close(fd) == 0;
        }));
        auto opened = base::open_own_file_to_read(at);
        REQUIRE_FALSE(opened);
        CHECK_THAT(opened.error().message, Catch::Contains("belongs to uid " + std::to_string(nobody().pw_uid)));
    }
    SECTION("its own file") {
        REQUIRE(base::write_file_atomically(p.dir / "cursor", "mine\n"));
        auto opened = base::open_own_file_to_read(p.dir / "cursor");
        REQUIRE(opened);
        REQUIRE(*opened);
        char text[16] = {};
        CHECK(::read(**opened, text, sizeof text) == 5);
        ::close(**opened);
    }
}
