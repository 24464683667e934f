// Result<T>: the project's one result type (STYLE.md "Errors are values").
//
// An expected failure — I/O, bad input, a peer — is returned as an Error carrying an errno
// value (so the C API can hand it on unchanged) and a message that names the thing, the value
// and what to do. Programmer errors are assertions, not Errors.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace kmes {

struct Error {
    int code = 0;         // errno value (EINVAL, EPERM, …)
    std::string message;  // human-readable; names the thing and the value
};

template <class T>
class [[nodiscard]] Result {
public:
    Result(T value) : v_(std::move(value)) {}
    Result(Error error) : v_(std::move(error)) {}

    bool ok() const { return v_.index() == 0; }
    explicit operator bool() const { return ok(); }

    T& value() & { assert(ok()); return std::get<0>(v_); }
    T&& value() && { assert(ok()); return std::get<0>(std::move(v_)); }
    const T& value() const& { assert(ok()); return std::get<0>(v_); }
    T* operator->() { return &value(); }
    T& operator*() & { return value(); }

    const Error& error() const { assert(!ok()); return std::get<1>(v_); }

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
    const Error& error() const { assert(failed_); return error_; }

private:
    Error error_;
    bool failed_ = false;
};

using Status = Result<void>;

// Error from the current errno, prefixed with what was being done.
Error errno_error(const std::string& what);
Error errno_error(int code, const std::string& what);

}  // namespace kmes
