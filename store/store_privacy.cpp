#include "store_privacy.hpp"

#include <sys/stat.h>

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

// Clear the forbidden bits of one path; "path: old -> new" when something changed.
base::Result<std::optional<std::string>> tighten(const fs::path& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) {
        if (errno == ENOENT) return std::optional<std::string>{};  // gone meanwhile (a -shm, say)
        return base::errno_error("cannot inspect " + path.string());
    }
    if (S_ISLNK(st.st_mode)) return std::optional<std::string>{};
    const unsigned mode = st.st_mode & 07777;
    if ((mode & kStoreForbiddenModeBits) == 0) return std::optional<std::string>{};
    const unsigned wanted = mode & ~kStoreForbiddenModeBits;
    if (::chmod(path.c_str(), wanted) != 0) return base::errno_error("cannot make " + path.string() + " private");
    return std::optional<std::string>{path.string() + ": " + octal(mode) + " -> " + octal(wanted)};
}

}  // namespace

void restrict_file_creation() {
    const mode_t old = ::umask(0);
    ::umask(old | kStoreForbiddenModeBits);
}

base::Result<std::vector<std::string>> make_store_private(const fs::path& dir) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return base::Error{ec.value(), "cannot create EventStorePath " + dir.string() + ": " + ec.message()};
    std::vector<std::string> tightened;
    auto changed = tighten(dir);
    if (!changed) return changed.error();
    if (*changed) tightened.push_back(std::move(**changed));
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        auto entry = tighten(it->path());
        if (!entry) return entry.error();
        if (*entry) tightened.push_back(std::move(**entry));
    }
    if (ec) return base::Error{ec.value(), "cannot list EventStorePath " + dir.string() + ": " + ec.message()};
    return tightened;
}

}  // namespace eventd::store
