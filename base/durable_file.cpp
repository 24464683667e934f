#include "base/durable_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <utility>

namespace base {
namespace fs = std::filesystem;
namespace {

// How often a temporary name found taken is removed and the O_EXCL create tried again: once
// covers a crash's leftover; more only helps someone who re-plants it as fast as it is removed.
constexpr int kCreateAttempts = 3;

// A descriptor, closed when it goes out of scope.
class Fd {
public:
    explicit Fd(int fd = -1) : fd_(fd) {}
    ~Fd() {
        if (fd_ >= 0) ::close(fd_);
    }
    Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    Fd& operator=(Fd&&) = delete;
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    int get() const { return fd_; }
    int release() { return std::exchange(fd_, -1); }

private:
    int fd_;
};

// Where a file lives: its directory, held open, and its name in it.
struct Place {
    Fd dir;
    fs::path dir_path;  // for messages only: nothing is opened by this path again
    std::string name;
    fs::path shown(const std::string& entry) const { return dir_path / entry; }
};

fs::path parent_of(const fs::path& path) {
    // "cursor" (a relative name in the working directory) has no parent_path: that is ".".
    return path.has_parent_path() ? path.parent_path() : fs::path(".");
}

Result<Place> place_of(const fs::path& path) {
    std::string name = path.filename().string();
    if (name.empty() || name == "." || name == "..")
        return Error{EISDIR, path.string() + " names a directory, not a file"};
    Place place{Fd(::open(parent_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)), parent_of(path),
                std::move(name)};
    if (place.dir.get() < 0) return errno_error("cannot open the directory " + place.dir_path.string());
    return place;
}

std::string temporary_name(const std::string& name) { return name + ".tmp"; }

Status fsync_directory(int dir, const fs::path& shown) {
    if (::fsync(dir) != 0)
        return errno_error("cannot fsync the directory " + shown.string() +
                           " (what was just renamed in it may not survive a crash)");
    return {};
}

// "uid 1000", for a message about a file found in the way.
std::string owner_of(int dir, const std::string& entry) {
    struct stat st {};
    if (::fstatat(dir, entry.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return "owner unknown";
    return std::string(S_ISLNK(st.st_mode) ? "a symbolic link" : "a file") + " of uid " + std::to_string(st.st_uid);
}

// The temporary, created new: O_EXCL|O_NOFOLLOW never opens an existing file nor follows a
// link. A name already there is a crash's leftover or was planted to redirect this write;
// unlinkat removes that name itself (a link, never its target) and the create is tried again.
Result<Fd> create_temporary(const Place& place, const std::string& tmp, unsigned mode) {
    for (int attempt = 1;; ++attempt) {
        Fd fd(::openat(place.dir.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                       static_cast<mode_t>(mode)));
        if (fd.get() >= 0) return fd;
        if (errno != EEXIST) return errno_error("cannot create " + place.shown(tmp).string());
        if (attempt == kCreateAttempts)
            return Error{EEXIST, place.shown(tmp).string() + " reappears each time it is removed: another user who " +
                                     "can write " + place.dir_path.string() +
                                     " is racing this program; make the directory writable by its owner only"};
        if (::unlinkat(place.dir.get(), tmp.c_str(), 0) != 0 && errno != ENOENT) {
            const int e = errno;
            return errno_error(e, "cannot remove " + place.shown(tmp).string() + " (" + owner_of(place.dir.get(), tmp) +
                                      ") left in the way of this program's temporary file; remove it");
        }
    }
}

Status write_all(int fd, std::string_view content) {
    size_t done = 0;
    while (done < content.size()) {
        const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return errno_error("write");
        done += size_t(n);
    }
    return {};
}

Status write_beside_in(const Place& place, std::string_view content, const NewFile& file) {
    const std::string tmp = temporary_name(place.name);
    const std::string shown = place.shown(tmp).string();
    auto created = create_temporary(place, tmp, file.mode);
    if (!created) return created.error();
    Fd fd = std::move(*created);
    auto fail = [&](int e, const std::string& what) -> Status {
        ::unlinkat(place.dir.get(), tmp.c_str(), 0);
        return errno_error(e, what);
    };
    // Ownership on the descriptor, before the first byte and before the file has its name.
    if (file.owner && ::fchown(fd.get(), file.owner->uid, file.owner->gid) != 0)
        return fail(errno, "cannot give " + shown + " to uid " + std::to_string(file.owner->uid) + " gid " +
                               std::to_string(file.owner->gid));
    if (auto st = write_all(fd.get(), content); !st) return fail(st.error().errno_value(), "cannot write " + shown);
    if (::fsync(fd.get()) != 0) return fail(errno, "cannot fsync " + shown);
    if (::close(fd.release()) != 0) return fail(errno, "cannot close " + shown);
    return {};
}

Status replace_in(const Place& place) {
    const std::string tmp = temporary_name(place.name);
    if (::renameat(place.dir.get(), tmp.c_str(), place.dir.get(), place.name.c_str()) != 0) {
        const int e = errno;
        ::unlinkat(place.dir.get(), tmp.c_str(), 0);
        return errno_error(e, "cannot rename " + place.shown(tmp).string() + " to " + place.shown(place.name).string());
    }
    return fsync_directory(place.dir.get(), place.dir_path);
}

}  // namespace

Status sync_directory(const fs::path& dir) {
    Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (fd.get() < 0) return errno_error("cannot open the directory " + dir.string() + " to fsync it");
    return fsync_directory(fd.get(), dir);
}

Status write_file_atomically(const fs::path& path, std::string_view content, const NewFile& file) {
    auto place = place_of(path);
    if (!place) return place.error();
    if (auto st = write_beside_in(*place, content, file); !st) return st;
    return replace_in(*place);
}

Status write_file_atomically(const fs::path& path, std::string_view content, unsigned mode) {
    return write_file_atomically(path, content, NewFile{mode, std::nullopt});
}

Status write_beside(const fs::path& path, std::string_view content, unsigned mode) {
    auto place = place_of(path);
    if (!place) return place.error();
    return write_beside_in(*place, content, NewFile{mode, std::nullopt});
}

Status replace_with_beside(const fs::path& path) {
    auto place = place_of(path);
    if (!place) return place.error();
    return replace_in(*place);
}

Result<std::optional<int>> open_own_file_to_read(const fs::path& path) {
    auto place = place_of(path);
    if (!place) return place.error();
    // O_NONBLOCK: a FIFO planted at the name must not hang the open.
    Fd fd(::openat(place->dir.get(), place->name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (fd.get() < 0) {
        if (errno == ENOENT) return std::optional<int>{};
        if (errno == ELOOP)
            return Error{ELOOP, path.string() + " is a symbolic link; this program replaces that file rather than " +
                                    "writing through a link, so it does not read through one either: name the " +
                                    "file itself"};
        return errno_error("cannot open " + path.string());
    }
    struct stat file {
    }, dir{};
    if (::fstat(fd.get(), &file) != 0 || ::fstat(place->dir.get(), &dir) != 0)
        return errno_error("cannot inspect " + path.string());
    if (!S_ISREG(file.st_mode)) return Error{EINVAL, path.string() + " is not a regular file"};
    const bool shared_sticky = (dir.st_mode & S_ISVTX) && (dir.st_mode & (S_IWGRP | S_IWOTH));
    if (shared_sticky && file.st_uid != ::geteuid() && file.st_uid != dir.st_uid)
        return Error{EPERM, path.string() + " belongs to uid " + std::to_string(file.st_uid) + ", in " +
                                place->dir_path.string() +
                                ", a sticky directory other users can write: another user may have put it "
                                "there; remove it, or keep the file in a directory of your own"};
    // Back to blocking reads (a regular file never blocks, but the flag would surprise a reader).
    ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
    return std::optional<int>{fd.release()};
}

}  // namespace base
