#include "base/unix_listener.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace base {
namespace {

// True when a process accepts connections on `addr` (a live instance, not a stale file).
bool answers(const sockaddr_un& addr, int type) {
    const int probe = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
    if (probe < 0) return false;
    const bool ok = connect(probe, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
    close(probe);
    return ok;
}

}  // namespace

Result<int> listen_unix_socket(const std::string& path, const UnixListenerOptions& o) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path) {
        return Error{ENAMETOOLONG, std::string(o.setting) + " too long (" + std::to_string(path.size()) +
                                       " bytes, at most " + std::to_string(sizeof addr.sun_path - 1) + "): " + path};
    }
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);

    std::error_code ec;
    const auto parent = std::filesystem::path(path).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);  // bind reports what matters

    struct stat st {};
    if (lstat(path.c_str(), &st) == 0) {
        if (!S_ISSOCK(st.st_mode))
            return Error{EEXIST, path + " exists and is not a socket; remove it or set " + o.setting};
        if (answers(addr, o.type))
            return Error{EADDRINUSE, std::string("another ") + o.daemon + " is already listening on " + path};
        unlink(path.c_str());  // stale socket of an earlier run
    }

    const int fd = socket(AF_UNIX, o.type | SOCK_CLOEXEC, 0);
    if (fd < 0) return errno_error("socket");
    auto fail = [&](const std::string& what, bool bound) -> Result<int> {
        Error e = errno_error(what + " " + path);
        close(fd);
        if (bound) unlink(path.c_str());
        return e;
    };
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return fail("bind", false);
    // Not chmod by path: between bind and here the directory's owner could swap the socket for a
    // link, and root (kmes-shimd) would make its target 0666. AT_SYMLINK_NOFOLLOW refuses a link.
    if (fchmodat(AT_FDCWD, path.c_str(), 0666, AT_SYMLINK_NOFOLLOW) != 0) return fail("chmod 0666", true);
    if (listen(fd, o.backlog) != 0) return fail("listen", true);
    return fd;
}

}  // namespace base
