#include "peer.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <sstream>
#include <string>

namespace kmes::shim {

bool PeerCredentials::in_group(gid_t gid) const {
    return egid == gid || std::find(groups.begin(), groups.end(), gid) != groups.end();
}

base::Result<PeerCredentials> socket_credentials(int socket_fd) {
    PeerCredentials peer;
    ucred cred{};
    socklen_t len = sizeof cred;
    if (getsockopt(socket_fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return base::errno_error("SO_PEERCRED");
    peer.pid = cred.pid;
    peer.euid = cred.uid;
    peer.ruid = cred.uid;
    peer.egid = cred.gid;

    // The groups the peer process really holds, as the kernel recorded them at connect().
    std::vector<gid_t> groups(64);
    for (;;) {
        socklen_t bytes = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
        if (getsockopt(socket_fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &bytes) == 0) {
            groups.resize(bytes / sizeof(gid_t));
            break;
        }
        if (errno != ERANGE) return base::errno_error("SO_PEERGROUPS");
        groups.resize(bytes / sizeof(gid_t) + 1);
    }
    peer.groups = std::move(groups);
    return peer;
}

void add_process_details(PeerCredentials& peer) {
    // Real uid and start time are not in SO_PEERCRED; /proc is best effort (the process may
    // already be gone, in which case the effective uid stands in for the real one).
    if (auto uids = process_uids(peer.pid)) peer.ruid = uids->first;
    peer.start_time = process_start_time(peer.pid).value_or(0);
}

base::Result<PeerCredentials> peer_credentials(int socket_fd) {
    auto peer = socket_credentials(socket_fd);
    if (peer) add_process_details(*peer);
    return peer;
}

namespace {

// A small /proc file of `pid`, read with read(2): a process that exits meanwhile makes read
// fail (ESRCH), which std::ifstream turns into an exception. nullopt when it cannot be read.
std::optional<std::string> read_proc_file(pid_t pid, const char* name) {
    const std::string path = "/proc/" + std::to_string(pid) + "/" + name;
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    std::string content;
    char buffer[4096];
    for (;;) {
        const ssize_t got = read(fd, buffer, sizeof buffer);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            close(fd);
            return std::nullopt;
        }
        if (got == 0) break;
        content.append(buffer, static_cast<size_t>(got));
    }
    close(fd);
    return content;
}

}  // namespace

std::optional<uint64_t> process_start_time(pid_t pid) {
    const auto stat = read_proc_file(pid, "stat");
    if (!stat) return std::nullopt;
    const std::string& content = *stat;
    // The command name (field 2) may hold spaces and ')': fields 3 on follow the last ')'.
    const auto close_paren = content.rfind(')');
    if (close_paren == std::string::npos || close_paren + 2 > content.size()) return std::nullopt;
    std::istringstream fields(content.substr(close_paren + 2));
    std::string field;
    for (int index = 3; index <= 22 && fields >> field; ++index) {
        if (index != 22) continue;
        uint64_t ticks = 0;
        const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), ticks);
        if (ec != std::errc() || end != field.data() + field.size()) return std::nullopt;
        return ticks;
    }
    return std::nullopt;
}

std::optional<std::pair<uid_t, uid_t>> process_uids(pid_t pid) {
    const auto text = read_proc_file(pid, "status");
    if (!text) return std::nullopt;
    std::istringstream status(*text);
    for (std::string line; std::getline(status, line);) {
        if (line.rfind("Uid:", 0) != 0) continue;
        uid_t real = 0, effective = 0;
        if (std::istringstream(line.substr(4)) >> real >> effective) return std::pair{real, effective};
        return std::nullopt;
    }
    return std::nullopt;
}

}  // namespace kmes::shim
