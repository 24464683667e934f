// Result<T>: the project's one result type (STYLE.md "Errors are values").
//
// An expected failure — I/O, bad input, a peer — is returned as an Error carrying a typed
// code and a message that names the thing, the value and what to do. Programmer errors are
// assertions, not Errors.
//
// The code is an ErrorCode whose value *is* the errno (ErrorCode::invalid == EINVAL), so the
// C API hands it on unchanged (errno_value()) and any errno — named in the enum or not — is a
// valid code. Callers branch on the typed code (error.code == ErrorCode::timed_out, or the
// predicates below), never on a raw errno. Error has an implicit constructor from an int errno
// so that `Error{EINVAL, "..."}` and `Error{errno, "..."}` keep reading as they always did;
// there is deliberately no comparison with int, so every check names what happened.
#pragma once

#include <cassert>
#include <cerrno>
#include <string>
#include <utility>
#include <variant>

namespace base {

// What went wrong. Values are errno values; the names are the ones the project branches on or
// reports. A cancel (shutdown, the client gave up) is ErrorCode::cancelled and is never
// counted as a failure (Error::is_cancelled).
enum class ErrorCode : int {
    none = 0,
    cancelled = ECANCELED,   // the operation was told to stop (eventd is shutting down)
    timed_out = ETIMEDOUT,   // a deadline passed (QueryTimeoutMs)
    invalid = EINVAL,        // bad input: a query, a configuration value, an argument
    io = EIO,                // a file or device failed
    no_space = ENOSPC,       // the disk is full
    permission = EPERM,      // not allowed for this caller (capability)
    access_denied = EACCES,  // not allowed for this caller (file or policy)
    not_found = ENOENT,
    exists = EEXIST,
    busy = EBUSY,
    would_block = EAGAIN,     // try again (full ring, no data yet)
    protocol = EPROTO,        // a peer or a file broke its format
    too_deep = ELOOP,         // nesting past a depth limit (msgpack::Reader)
    stale = ESTALE,           // the object went away underneath (a new KMES boot)
    broken_pipe = EPIPE,      // the peer is gone
    too_many_files = EMFILE,  // the process is out of file descriptors (RLIMIT_NOFILE)
    no_memory = ENOMEM,
    not_supported = ENOTSUP,
    connection_refused = ECONNREFUSED,  // nothing listens on the socket
};

struct Error {
    ErrorCode code = ErrorCode::none;
    std::string message;  // human-readable; names the thing and the value

    Error() = default;
    Error(ErrorCode c, std::string m) : code(c), message(std::move(m)) {}
    // From an errno value (see the comment at the top of the file).
    Error(int errno_value, std::string m) : code(static_cast<ErrorCode>(errno_value)), message(std::move(m)) {}

    // For the C API and strerror: the errno this error stands for.
    int errno_value() const { return static_cast<int>(code); }
    // A cancel is not a failure: nothing went wrong, the caller asked to stop.
    bool is_cancelled() const { return code == ErrorCode::cancelled; }
    bool is_timed_out() const { return code == ErrorCode::timed_out; }
};

template <class T>
class [[nodiscard]] Result {
public:
    Result(T value) : v_(std::move(value)) {}
    Result(Error error) : v_(std::move(error)) {}

    bool ok() const { return v_.index() == 0; }
    explicit operator bool() const { return ok(); }

    T& value() & {
        assert(ok());
        return std::get<0>(v_);
    }
    T&& value() && {
        assert(ok());
        return std::get<0>(std::move(v_));
    }
    const T& value() const& {
        assert(ok());
        return std::get<0>(v_);
    }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }
    // Not on a temporary: the reference would outlive it (take value() of an rvalue instead).
    void operator*() && = delete;

    const Error& error() const {
        assert(!ok());
        return std::get<1>(v_);
    }

private:
    std::variant<T, Error> v_;
};

// Result<void>: success or an Error.
template <>
class [[nodiscard]] Result<void> {
public:
    Result() = default;
    Result(Error error) : error_(std::move(error)), failed_(true) {}
    bool ok() const { return !failed_; }
    explicit operator bool() const { return ok(); }
    const Error& error() const {
        assert(failed_);
        return error_;
    }

private:
    Error error_;
    bool failed_ = false;
};

using Status = Result<void>;

// Error from the current errno, prefixed with what was being done.
Error errno_error(const std::string& what);
Error errno_error(int code, const std::string& what);

}  // namespace base
