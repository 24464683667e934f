// The client end of eventd's query socket (PSD-008 §8.8), for eventctl, eventd-forward and the
// tests: a Unix stream socket carrying frames (wire.hpp)
//
//   +----------------------+---------------------------+
//   | u32 length, LE       | msgpack map, length bytes |
//   +----------------------+---------------------------+
//
// One query per connection. Waiting for a frame also wakes on Ctrl-C (base/interrupt.hpp).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "protocol/wire.hpp"

namespace protocol {

enum class ReadResult { frame, closed, interrupted };

class Connection {
public:
    // The error names the path and suggests --socket / $EVENTD_SOCKET / checking eventd runs.
    static base::Result<Connection> open(const std::string& path);

    Connection(Connection&& other) noexcept;
    Connection& operator=(Connection&&) = delete;
    Connection(const Connection&) = delete;
    ~Connection();

    // kInterrupted: Ctrl-C while blocked. A peer that already closed is an Error.
    base::Result<ReadResult> send_frame(std::span<const uint8_t> body);
    // kClosed only at a frame boundary; a frame cut short is an Error.
    base::Result<ReadResult> read_frame(std::vector<uint8_t>& body);
    // The socket, for a shutdown() from another thread that must end a blocked read.
    int fd() const { return fd_; }

private:
    Connection(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
    // Fills exactly out.size() bytes. kClosed if the peer closed before the first byte.
    // `before` bytes of a `total` (0: out.size()) were read already: an error counts them.
    base::Result<ReadResult> read_exact(std::span<uint8_t> out, std::size_t before = 0, std::size_t total = 0);

    int fd_ = -1;
    std::string path_;
};

}  // namespace protocol
