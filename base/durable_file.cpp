#include "base/durable_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace base {

void sync_directory(const std::filesystem::path& dir) {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    ::fsync(fd);
    ::close(fd);
}

namespace {

std::filesystem::path beside(const std::filesystem::path& path) {
    std::filesystem::path tmp = path;
    tmp += ".tmp";
    return tmp;
}

}  // namespace

base::Status write_file_atomically(const std::filesystem::path& path, std::string_view content, unsigned mode) {
    if (auto st = write_beside(path, content, mode); !st) return st;
    return replace_with_beside(path);
}

base::Status write_beside(const std::filesystem::path& path, std::string_view content, unsigned mode) {
    const std::filesystem::path tmp = beside(path);
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, static_cast<mode_t>(mode));
    if (fd < 0) return base::errno_error("cannot create " + tmp.string());
    size_t done = 0;
    while (done < content.size()) {
        const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const int e = errno;
            ::close(fd);
            ::unlink(tmp.c_str());
            return base::errno_error(e, "cannot write " + tmp.string());
        }
        done += size_t(n);
    }
    if (::fsync(fd) != 0) {
        const int e = errno;
        ::close(fd);
        ::unlink(tmp.c_str());
        return base::errno_error(e, "cannot fsync " + tmp.string());
    }
    ::close(fd);
    return {};
}

base::Status replace_with_beside(const std::filesystem::path& path) {
    const std::filesystem::path tmp = beside(path);
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        const int e = errno;
        ::unlink(tmp.c_str());
        return base::errno_error(e, "cannot rename " + tmp.string() + " to " + path.string());
    }
    // "cursor" (a relative name in the working directory) has no parent_path: that is ".".
    sync_directory(path.has_parent_path() ? path.parent_path() : std::filesystem::path("."));
    return {};
}

}  // namespace base
