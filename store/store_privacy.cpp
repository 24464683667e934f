#include "store_privacy.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <optional>

namespace eventd::store {
namespace fs = std::filesystem;
namespace {

std::string octal(unsigned mode) {
    char text[8];
    std::snprintf(text, sizeof text, "%04o", mode & 07777);
    return text;
}

// Clear the forbidden bits of `entry` in the directory `dir` (a descriptor: the entry is
// found there even if the path is changed meanwhile); "path: old -> new" when something
// changed. Never through a symbolic link: fchmodat(AT_SYMLINK_NOFOLLOW) refuses one (a link
// swapped in after the fstatat included), where chmod by path would change its target.
base::Result<std::optional<std::string>> tighten(int dir, const char* entry, const fs::path& shown) {
    struct stat st {};
    if (::fstatat(dir, entry, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) return std::optional<std::string>{};  // gone meanwhile (a -shm, say)
        return base::errno_error("cannot inspect " + shown.string());
    }
    if (S_ISLNK(st.st_mode)) return std::optional<std::string>{};
    const unsigned mode = st.st_mode & 07777;
    if ((mode & kStoreForbiddenModeBits) == 0) return std::optional<std::string>{};
    const unsigned wanted = mode & ~kStoreForbiddenModeBits;
    if (::fchmodat(dir, entry, wanted, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == EOPNOTSUPP || errno == ENOENT) return std::optional<std::string>{};  // a link now, or gone
        return base::errno_error("cannot make " + shown.string() + " private");
    }
    return std::optional<std::string>{shown.string() + ": " + octal(mode) + " -> " + octal(wanted)};
}

// "mode 0777, owner uid 1000 gid 1000"
std::string mode_and_owner(const struct stat& st) {
    return "mode " + octal(st.st_mode) + ", owner uid " + std::to_string(st.st_uid) + " gid " +
           std::to_string(st.st_gid);
}

}  // namespace

void restrict_file_creation() {
    const mode_t old = ::umask(0);
    ::umask(old | kStoreForbiddenModeBits);
}

base::Status refuse_shared_store_directory(const fs::path& dir) {
    if (::geteuid() != 0) return {};
    const fs::path absolute = fs::absolute(dir).lexically_normal();
    struct stat st {};
    if (::stat(absolute.c_str(), &st) != 0) return base::errno_error("cannot inspect EventStorePath " + dir.string());
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        return base::Error{EPERM, "EventStorePath " + dir.string() + " can be written by others than its owner (" +
                                      mode_and_owner(st) +
                                      "): run as root, eventd and eventctl make no file in a directory where "
                                      "another user can plant links; make it writable by its owner only (chmod "
                                      "go-w " +
                                      dir.string() + ", docs/OPERATIONS.md \"Files written as root\")"};
    // A parent others can write without the sticky bit lets them put another directory in the
    // store's place between two steps; a sticky one (/tmp) does not (only the owner may rename).
    for (fs::path parent = absolute.parent_path(); !parent.empty(); parent = parent.parent_path()) {
        if (::stat(parent.c_str(), &st) != 0) return base::errno_error("cannot inspect " + parent.string());
        if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
            return base::Error{EPERM, "EventStorePath " + dir.string() + " is inside " + parent.string() +
                                          ", which others than its owner can write (" + mode_and_owner(st) +
                                          "): run as root, eventd and eventctl make no file where another user "
                                          "can replace the directory; chmod go-w " +
                                          parent.string() + " (docs/OPERATIONS.md \"Files written as root\")"};
        if (parent == parent.root_path()) break;
    }
    return {};
}

base::Result<std::vector<std::string>> make_store_private(const fs::path& dir) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return base::Error{ec.value(), "cannot create EventStorePath " + dir.string() + ": " + ec.message()};
    if (auto s = refuse_shared_store_directory(dir); !s) return s.error();
    // eventd itself as root: SQLite opens the shard files by their names, so a directory of
    // another user would let that user point shard-NNNN.db at any file of root's.
    struct stat owner {};
    if (::geteuid() == 0 && ::stat(dir.c_str(), &owner) == 0 && owner.st_uid != 0)
        return base::Error{EPERM, "EventStorePath " + dir.string() + " belongs to uid " + std::to_string(owner.st_uid) +
                                      " but eventd runs as root: that user could make the store's file names "
                                      "point at root's files; run eventd as the store's owner (User= in "
                                      "eventd.service) or give the store to root (docs/OPERATIONS.md \"Files "
                                      "written as root\")"};
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return base::errno_error("cannot open EventStorePath " + dir.string());
    struct Close {
        int fd;
        ~Close() { ::close(fd); }
    } close_dir{fd};
    std::vector<std::string> tightened;
    auto changed = tighten(fd, ".", dir);
    if (!changed) return changed.error();
    if (*changed) tightened.push_back(std::move(**changed));
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        auto entry = tighten(fd, name.c_str(), it->path());
        if (!entry) return entry.error();
        if (*entry) tightened.push_back(std::move(**entry));
    }
    if (ec) return base::Error{ec.value(), "cannot list EventStorePath " + dir.string() + ": " + ec.message()};
    return tightened;
}

}  // namespace eventd::store
