// The spool: records received before eventd says `end` (or `watch`) wait here, so that a query
// failing halfway prints nothing but its error (issue 4, eventctl). Up to 8 MiB they wait in
// memory — most results never touch a file. The record that would pass 8 MiB moves them all to
// an unlinked temporary file — O_TMPFILE in $TMPDIR (else /tmp), or mkstemp + unlink where
// O_TMPFILE is not supported — and every later record follows them there, so memory stays
// bounded however large the result.
//
//   layout, in memory and in the file: [u32 LE length][record msgpack bytes] [u32 LE length][...] ...
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "base/result.hpp"

namespace eventctl {

class Spool {
public:
    Spool() = default;
    ~Spool();
    Spool(const Spool&) = delete;
    Spool& operator=(const Spool&) = delete;

    base::Status append(std::span<const uint8_t> record);
    // Hands every record back in arrival order, then empties the spool.
    base::Status drain(const std::function<base::Status(std::span<const uint8_t>)>& sink);

    uint64_t count() const { return count_; }

    // Bytes (records and their length headers) kept in memory before the spool moves to a file.
    static constexpr std::size_t kMemoryLimit = 8 * 1024 * 1024;

private:
    base::Status spill();
    base::Status create_file();
    base::Status write_out();
    base::Status drain_memory(const std::function<base::Status(std::span<const uint8_t>)>& sink);
    base::Status drain_file(const std::function<base::Status(std::span<const uint8_t>)>& sink);

    int fd_ = -1;  // -1 while the records fit in memory
    std::string directory_;
    std::vector<uint8_t> pending_;  // every record while in memory; then buffered file writes
    uint64_t count_ = 0;
};

}  // namespace eventctl
