#include "output.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/interrupt.hpp"

namespace eventctl {
namespace {

constexpr std::size_t kFlushAt = 64 * 1024;

}  // namespace

void Output::write(std::string_view bytes) {
    if (error_ != 0 || stopped_) return;
    buffer_.append(bytes);
    if (buffer_.size() >= kFlushAt) drain();
}

void Output::drain() {
    std::size_t done = 0;
    while (done < buffer_.size() && error_ == 0 && !stopped_) {
        const ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
        if (n > 0) {
            done += static_cast<std::size_t>(n);
        } else if (n < 0 && errno == EINTR) {
            if (base::interrupted()) stopped_ = true;
        } else {
            error_ = n < 0 ? errno : EIO;
        }
    }
    buffer_.clear();
}

base::Status Output::flush() {
    drain();
    if (error_ != 0)
        return base::Error{error_, std::string("cannot write to standard output: ") + std::strerror(error_)};
    return {};
}

}  // namespace eventctl
