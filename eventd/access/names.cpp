// getpwnam_r / getgrnam_r / getpwuid_r with a buffer that grows on ERANGE (large groups).
#include "eventd/access/names.hpp"

#include <grp.h>
#include <pwd.h>

#include <cerrno>
#include <vector>

namespace eventd::access {
namespace {

constexpr size_t kInitialBuffer = 4096;
constexpr size_t kMaxBuffer = size_t{1} << 24;  // 16 MiB: a group with very many members

// Calls `lookup(buffer) -> errno-style int` until the buffer is big enough.
template <class Lookup>
bool with_buffer(Lookup lookup) {
    std::vector<char> buffer(kInitialBuffer);
    for (;;) {
        const int rc = lookup(buffer);
        if (rc != ERANGE) return rc == 0;
        if (buffer.size() >= kMaxBuffer) return false;
        buffer.resize(buffer.size() * 2);
    }
}

}  // namespace

std::optional<uid_t> uid_of_user(const std::string& name) {
    struct passwd entry {};
    struct passwd* found = nullptr;
    const bool ok = with_buffer([&](std::vector<char>& buffer) {
        return getpwnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found);
    });
    if (!ok || found == nullptr) return std::nullopt;
    return found->pw_uid;
}

std::optional<gid_t> gid_of_group(const std::string& name) {
    struct group entry {};
    struct group* found = nullptr;
    const bool ok = with_buffer([&](std::vector<char>& buffer) {
        return getgrnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found);
    });
    if (!ok || found == nullptr) return std::nullopt;
    return found->gr_gid;
}

std::optional<std::string> user_name_of(uid_t uid) {
    struct passwd entry {};
    struct passwd* found = nullptr;
    std::string name;
    const bool ok = with_buffer([&](std::vector<char>& buffer) {
        const int rc = getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found);
        // Copy while the buffer is alive: pw_name points into it.
        if (rc == 0 && found != nullptr) name = found->pw_name;
        return rc;
    });
    if (!ok || found == nullptr) return std::nullopt;
    return name;
}

}  // namespace eventd::access
