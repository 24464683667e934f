#include "base/result.hpp"

#include <cerrno>
#include <cstring>

namespace base {
Error errno_error(int code, const std::string& what) { return Error{code, what + ": " + std::strerror(code)}; }
Error errno_error(const std::string& what) { return errno_error(errno, what); }
}  // namespace base
