// The spool: records received before eventd says `end` (or `watch`) wait here, so that a query
// failing halfway prints nothing but its error (issue 4, eventctl). They live in an unlinked
// temporary file — O_TMPFILE in $TMPDIR (else /tmp), or mkstemp + unlink where O_TMPFILE is not
// supported — so memory stays small however large the result. Created at the first record.
//
//   file layout: [u32 LE length][record msgpack bytes] [u32 LE length][...] ...
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "kmes/result.hpp"

namespace eventctl {

class Spool {
public:
    Spool() = default;
    ~Spool();
    Spool(const Spool&) = delete;
    Spool& operator=(const Spool&) = delete;

    kmes::Status append(std::span<const uint8_t> record);
    // Hands every record back in arrival order, then empties the spool.
    kmes::Status drain(const std::function<kmes::Status(std::span<const uint8_t>)>& sink);

    uint64_t count() const { return count_; }

private:
    kmes::Status create_file();
    kmes::Status write_out();

    int fd_ = -1;
    std::string directory_;
    std::vector<uint8_t> pending_;  // buffered writes
    uint64_t count_ = 0;
};

}  // namespace eventctl
