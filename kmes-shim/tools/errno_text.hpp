// Error text shared by kmes-emit and kmes-tail: errno names, and advice that names the
// shim socket when the shim cannot be reached or refuses us.
#pragma once

#include <string>

namespace kmes::tools {

// "EPERM", "EAGAIN", …; "errno 1234" for a value glibc does not name.
std::string errno_name(int code);

// "EPERM (Operation not permitted)".
std::string errno_text(int code);

// The socket libkmes connects to: $KMES_SOCKET, else KMES_DEFAULT_SOCKET (DESIGN.md §5).
std::string shim_socket_path();

// What the user should do about `code` when talking to the shim failed, or "" when there
// is nothing more useful to say than the errno itself. `action` is "attach" or "emit".
std::string shim_advice(int code, const std::string& action);

}  // namespace kmes::tools
