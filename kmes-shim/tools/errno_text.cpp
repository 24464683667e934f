#include "errno_text.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "kmes/kmes.h"

namespace kmes::tools {

std::string errno_name(int code) {
    // glibc ≥ 2.32 knows every name; older libcs fall back to the number.
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
    if (const char* name = strerrorname_np(code)) return name;
#endif
    return "errno " + std::to_string(code);
}

std::string errno_text(int code) { return errno_name(code) + " (" + std::strerror(code) + ")"; }

std::string shim_socket_path() {
    const char* env = std::getenv("KMES_SOCKET");
    return env && *env ? env : KMES_DEFAULT_SOCKET;
}

std::string shim_advice(int code, const std::string& action) {
    const std::string where = std::getenv("KMES_SOCKET") && *std::getenv("KMES_SOCKET")
                                  ? shim_socket_path() + " (from $KMES_SOCKET)"
                                  : shim_socket_path() + " (the default; set $KMES_SOCKET to use another)";
    switch (code) {
        case ENOENT:
        case ECONNREFUSED:
            return "no KMES shim is listening on " + where +
                   ". Start kmes-shimd (./scripts/run does), or point $KMES_SOCKET at the socket it listens on.";
        case EACCES:
            return "cannot open the socket " + where + ": its file permissions do not let this user connect.";
        case EPERM:
            return action == "attach"
                       ? "the shim at " + where + " refused to attach: run as root or as a member of its AttachGroup."
                       : "the shim at " + where + " refused the emit: run as root or as a member of its EmitGroup.";
        case ENAMETOOLONG:
            return "the socket path " + where + " is too long for a Unix socket address.";
        default:
            return "";
    }
}

}  // namespace kmes::tools
