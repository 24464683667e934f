// Who is on the other end of a shim connection (DESIGN.md §2: SO_PEERCRED plus the peer's
// supplementary groups, captured once at connect).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "base/result.hpp"

namespace kmes::shim {

struct PeerCredentials {
    pid_t pid = 0;
    uid_t euid = 0;  // effective (SO_PEERCRED)
    uid_t ruid = 0;  // real, from /proc/<pid>/status
    gid_t egid = 0;
    std::vector<gid_t> groups;  // supplementary groups of the peer process (SO_PEERGROUPS)
    uint64_t start_time = 0;    // /proc/<pid>/stat field 22: tells a reused pid apart

    bool is_root() const { return euid == 0; }
    bool in_group(gid_t gid) const;
};

// The socket's part only (SO_PEERCRED, SO_PEERGROUPS): pid, euid, egid, groups — what the
// acceptor needs to count a connection against its uid, without reading /proc.
base::Result<PeerCredentials> socket_credentials(int socket_fd);
// Adds the real uid and start time from /proc (best effort: the process may be gone, and then
// the effective uid stands in for the real one).
void add_process_details(PeerCredentials& peer);
// Both.
base::Result<PeerCredentials> peer_credentials(int socket_fd);

// /proc/<pid>/stat field 22: when the process started, in clock ticks since boot; nullopt when
// the process is gone (or /proc unreadable).
std::optional<uint64_t> process_start_time(pid_t pid);

// /proc/<pid>/status "Uid:": the real and effective uid; nullopt when the process is gone.
std::optional<std::pair<uid_t, uid_t>> process_uids(pid_t pid);

}  // namespace kmes::shim
