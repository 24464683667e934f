// Buffered writes to standard output. A write blocked on a full pipe returns when Ctrl-C
// arrives (no SA_RESTART, interrupt.hpp); the rest is then dropped, since the user asked to stop.
// A reader that closed the pipe ends eventctl through SIGPIPE, like any filter.
#pragma once

#include <string>
#include <string_view>

#include "base/result.hpp"

namespace eventctl {

class Output {
public:
    explicit Output(int fd) : fd_(fd) {}
    Output(const Output&) = delete;
    Output& operator=(const Output&) = delete;

    void write(std::string_view bytes);
    // Writes everything buffered; the first write error (kept) is returned from then on.
    base::Status flush();
    // Ctrl-C interrupted a blocked write and the rest was dropped: what was buffered did not
    // all reach standard output (a saved cursor must not claim it did).
    bool stopped() const { return stopped_; }

private:
    void drain();

    int fd_;
    std::string buffer_;
    int error_ = 0;
    bool stopped_ = false;  // interrupted while blocked: drop the rest
};

}  // namespace eventctl
