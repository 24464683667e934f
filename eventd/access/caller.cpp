// caller_of: the connect-time identity of a query client (PSD-008 §9.2, DESIGN.md §2).
// Every failure is an error: the server then refuses the query (fail closed, DESIGN.md §3.6).
#include "eventd/access/caller.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <fstream>
#include <sstream>
#include <string>

#include "eventd/access/names.hpp"

namespace eventd::access {

bool Caller::in_group(gid_t g) const { return std::find(groups.begin(), groups.end(), g) != groups.end(); }

std::string Caller::user_name() const { return user_name_of(uid).value_or("uid:" + std::to_string(uid)); }

namespace {

// SO_PEERGROUPS (Linux ≥ 4.13): the supplementary groups the peer held at connect(), the
// same snapshot as SO_PEERCRED. nullopt when the kernel does not know the option.
base::Result<std::optional<std::vector<gid_t>>> peer_groups(int fd) {
#ifdef SO_PEERGROUPS
    std::vector<gid_t> groups(64);
    for (;;) {
        socklen_t length = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
        if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &length) == 0) {
            groups.resize(length / sizeof(gid_t));
            return std::optional<std::vector<gid_t>>(std::move(groups));
        }
        if (errno == ERANGE && length > groups.size() * sizeof(gid_t)) {
            groups.resize(length / sizeof(gid_t));  // the kernel told us how much room it needs
            continue;
        }
        if (errno == ENOPROTOOPT) return std::optional<std::vector<gid_t>>();
        return base::errno_error("cannot read the query client's groups (SO_PEERGROUPS)");
    }
#else
    (void)fd;
    return std::optional<std::vector<gid_t>>();
#endif
}

// Parses "Label:\t<n> <n> …" into numbers; false on anything unexpected.
bool parse_ids(std::string_view text, std::vector<unsigned long>& out) {
    size_t i = 0;
    while (i < text.size()) {
        while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
        if (i == text.size()) break;
        unsigned long value = 0;
        const auto [end, ec] = std::from_chars(text.data() + i, text.data() + text.size(), value);
        if (ec != std::errc()) return false;
        out.push_back(value);
        i = static_cast<size_t>(end - text.data());
    }
    return true;
}

}  // namespace

namespace detail {

// /proc/<pid>/status fallback. The "Uid:" / "Gid:" lines (real, effective, saved, fs) must
// still show the effective ids SO_PEERCRED reported; otherwise the pid may have been reused
// by another process, whose groups must not be borrowed.
base::Result<std::vector<gid_t>> proc_groups(pid_t pid, uid_t uid, gid_t gid) {
    const std::string path = "/proc/" + std::to_string(pid) + "/status";
    std::ifstream in(path);
    if (!in) {
        return base::Error{ESRCH, "cannot read the query client's groups from " + path + " (the process has exited?)"};
    }
    std::vector<unsigned long> uids, gids, groups;
    bool have_groups = false;
    std::string line;
    while (std::getline(in, line)) {
        const std::string_view view(line);
        bool ok = true;
        if (view.rfind("Uid:", 0) == 0)
            ok = parse_ids(view.substr(4), uids);
        else if (view.rfind("Gid:", 0) == 0)
            ok = parse_ids(view.substr(4), gids);
        else if (view.rfind("Groups:", 0) == 0) {
            ok = parse_ids(view.substr(7), groups);
            have_groups = true;
        }
        if (!ok) return base::Error{EIO, "cannot parse " + path + ": unexpected line '" + line + "'"};
    }
    if (uids.size() < 2 || gids.size() < 2 || !have_groups) {
        return base::Error{EIO, "cannot read the query client's groups: " + path + " lacks Uid/Gid/Groups"};
    }
    if (uids[1] != uid || gids[1] != gid) {
        return base::Error{
            ESRCH, "query client pid " + std::to_string(pid) + " no longer has the credentials it connected with"};
    }
    return std::vector<gid_t>(groups.begin(), groups.end());
}

}  // namespace detail

base::Result<Caller> caller_of(int connected_fd) {
    struct ucred credentials {};
    socklen_t length = sizeof(credentials);
    if (getsockopt(connected_fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) {
        return base::errno_error("cannot read the query client's credentials (SO_PEERCRED)");
    }
    if (length != sizeof(credentials) || credentials.pid <= 0) {
        // A socket without a connected peer reports pid 0 and uid/gid -1: never a caller.
        return base::Error{ENOTCONN, "the query socket has no peer credentials"};
    }
    Caller caller;
    caller.pid = credentials.pid;
    caller.uid = credentials.uid;
    caller.gid = credentials.gid;

    auto snapshot = peer_groups(connected_fd);
    if (!snapshot.ok()) return snapshot.error();
    std::vector<gid_t> supplementary;
    if (snapshot.value()) {
        supplementary = std::move(*snapshot.value());
    } else {
        auto from_proc = detail::proc_groups(caller.pid, caller.uid, caller.gid);
        if (!from_proc.ok()) return from_proc.error();
        supplementary = std::move(from_proc.value());
    }
    caller.groups.push_back(caller.gid);
    for (gid_t g : supplementary) {
        if (!caller.in_group(g)) caller.groups.push_back(g);
    }
    return caller;
}

}  // namespace eventd::access
