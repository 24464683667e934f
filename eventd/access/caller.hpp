// Who is asking (PSD-008 §9.2 caller identity, mapped per DESIGN.md §2): SO_PEERCRED plus the
// peer's supplementary groups, captured once when the connection is accepted — the stand-in
// for kacs_open_peer_token's connect-time snapshot. Failure → the connection is denied.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "base/result.hpp"

namespace eventd::access {

struct Caller {
    pid_t pid = 0;
    uid_t uid = 0;
    gid_t gid = 0;
    std::vector<gid_t> groups;  // primary gid first, then supplementary groups

    bool is_root() const { return uid == 0; }
    bool in_group(gid_t g) const;
    // For log lines: the passwd name, or "uid:N" when the uid has none. Looked up when asked,
    // not at connect: only a few rare log lines need it, and the lookup reads /etc/passwd.
    std::string user_name() const;
};

// Credentials of the peer of a connected AF_UNIX socket. uid, gid and pid come from
// SO_PEERCRED (fixed at connect time). Supplementary groups come from SO_PEERGROUPS, which the
// kernel also snapshots at connect time; on a kernel without it, from /proc/<pid>/status
// "Groups:" (what the process holds now), accepted only when that file's effective
// Uid/Gid still match the socket credentials (a recycled pid is refused). When the process is
// gone already or anything is unreadable: an error (deny), never a guess.
base::Result<Caller> caller_of(int connected_fd);

namespace detail {
// The /proc fallback on its own (for tests): supplementary groups of `pid`, provided its
// effective uid/gid are still `uid`/`gid`.
base::Result<std::vector<gid_t>> proc_groups(pid_t pid, uid_t uid, gid_t gid);
}  // namespace detail

}  // namespace eventd::access
