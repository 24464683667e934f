// getpwnam_r / getgrnam_r / getpwuid_r with a buffer that grows on ERANGE (large groups).
#include "eventd/access/names.hpp"

#include <grp.h>
#include <pwd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace eventd::access {
namespace {

constexpr size_t kInitialBuffer = 4096;
constexpr size_t kMaxBuffer = size_t{1} << 24;  // 16 MiB: a group with very many members

// Calls `lookup(buffer) -> errno-style int` until the buffer is big enough; the last result
// (ERANGE when even the largest buffer was too small).
template <class Lookup>
int with_buffer(Lookup lookup) {
    std::vector<char> buffer(kInitialBuffer);
    for (;;) {
        const int rc = lookup(buffer);
        if (rc != ERANGE) return rc;
        if (buffer.size() >= kMaxBuffer) return rc;
        buffer.resize(buffer.size() * 2);
    }
}

// getpwnam_r(3): "0 or ENOENT or ESRCH or EBADF or EPERM or …" may each mean "not found" on
// some system; glibc answers a missing name with 0 and no entry. Any other code is a failed
// lookup — and so is any non-zero code here: a deny must not vanish on a guess (issue 39).
base::Error lookup_failed(const char* what, const std::string& name, int rc) {
    return base::Error{rc, std::string(what) + " '" + name + "' could not be looked up: " + std::strerror(rc)};
}

}  // namespace

base::Result<std::optional<uid_t>> uid_of_user(const std::string& name) {
    struct passwd entry {};
    struct passwd* found = nullptr;
    const int rc = with_buffer([&](std::vector<char>& buffer) {
        return getpwnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found);
    });
    if (rc != 0) return lookup_failed("user", name, rc);
    if (found == nullptr) return std::optional<uid_t>();
    return std::optional<uid_t>(found->pw_uid);
}

base::Result<std::optional<gid_t>> gid_of_group(const std::string& name) {
    struct group entry {};
    struct group* found = nullptr;
    const int rc = with_buffer([&](std::vector<char>& buffer) {
        return getgrnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found);
    });
    if (rc != 0) return lookup_failed("group", name, rc);
    if (found == nullptr) return std::optional<gid_t>();
    return std::optional<gid_t>(found->gr_gid);
}

std::optional<std::string> user_name_of(uid_t uid) {
    struct passwd entry {};
    struct passwd* found = nullptr;
    std::string name;
    const int rc = with_buffer([&](std::vector<char>& buffer) {
        const int r = getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found);
        // Copy while the buffer is alive: pw_name points into it.
        if (r == 0 && found != nullptr) name = found->pw_name;
        return r;
    });
    if (rc != 0 || found == nullptr) return std::nullopt;
    return name;
}

}  // namespace eventd::access
