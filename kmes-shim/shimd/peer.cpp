#include "peer.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

namespace kmes::shim {

bool PeerCredentials::in_group(gid_t gid) const {
    return egid == gid || std::find(groups.begin(), groups.end(), gid) != groups.end();
}

Result<PeerCredentials> peer_credentials(int socket_fd) {
    PeerCredentials peer;
    ucred cred{};
    socklen_t len = sizeof cred;
    if (getsockopt(socket_fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return errno_error("SO_PEERCRED");
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
        if (errno != ERANGE) return errno_error("SO_PEERGROUPS");
        groups.resize(bytes / sizeof(gid_t) + 1);
    }
    peer.groups = std::move(groups);

    // Real uid and start time are not in SO_PEERCRED; /proc is best effort (the process may
    // already be gone, in which case the effective uid stands in for the real one).
    std::ifstream status("/proc/" + std::to_string(peer.pid) + "/status");
    for (std::string line; std::getline(status, line);) {
        if (line.rfind("Uid:", 0) == 0) {
            std::istringstream(line.substr(4)) >> peer.ruid;
            break;
        }
    }
    std::ifstream stat("/proc/" + std::to_string(peer.pid) + "/stat");
    std::string content((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    if (auto close_paren = content.rfind(')'); close_paren != std::string::npos) {
        std::istringstream fields(content.substr(close_paren + 2));  // field 3 onwards
        std::string field;
        for (int index = 3; index <= 22 && fields >> field; ++index)
            if (index == 22) peer.start_time = std::stoull(field);
    }
    return peer;
}

}  // namespace kmes::shim
