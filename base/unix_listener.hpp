// The listening AF_UNIX socket of a daemon (kmes-shimd's SocketPath, eventd's QuerySocketPath):
//   the parent directory created; an earlier run's stale socket removed — never a file that is
//   not a socket, and not a socket a running instance still answers on; bound; mode 0666
//   (anyone may connect: every request is authorised on the peer's credentials, not on file
//   permissions — PSD-003 / PSD-008 access rules); listening.
// On failure nothing is left behind: the descriptor is closed and a path bound here removed.
#pragma once

#include <string>

#include "base/result.hpp"

namespace base {

struct UnixListenerOptions {
    int type = 0;  // SOCK_STREAM or SOCK_SEQPACKET (CLOEXEC is added)
    int backlog = 64;
    const char* setting = "";  // the configuration key naming the path, for error messages
    const char* daemon = "";   // "kmes-shimd", "eventd": "another <daemon> is already listening on …"
};

// The listening descriptor (the caller closes it and unlinks `path` when it stops).
Result<int> listen_unix_socket(const std::string& path, const UnixListenerOptions& options);

}  // namespace base
