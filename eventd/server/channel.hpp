// The socket side of one query session: blocking sends bounded by a deadline (the initial
// result, SO_SNDTIMEO set before each send to the time left) and sends that never wait (a
// stream's live phase, PSD-008 §8.7.6).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace eventd::server {

enum class Sent { ok, timed_out, would_block, torn, closed };

class Channel {
public:
    // Takes over a connected socket (not its ownership): clears O_NONBLOCK, which Asio may
    // have left set and SO_SNDTIMEO needs cleared.
    explicit Channel(int fd);

    // The whole frame before `deadline`: ok; nothing sent in time: timed_out; part of it: torn.
    Sent send_until(const std::vector<uint8_t>& frame, std::chrono::steady_clock::time_point deadline);
    // §8.7.6: never wait. Nothing written → would_block; part of the frame → torn (the
    // connection can only be closed then: anything more would be read as the frame's rest).
    // A frame is only started when the send buffer has room for all of it, so a slow client
    // normally gets a whole error frame rather than a cut one.
    Sent send_now(const std::vector<uint8_t>& frame);
    // Room for `bytes` more in the send buffer (the kernel's own accounting).
    bool fits(size_t bytes) const;
    // A stream's buffer: room for bursts between two reads of a client that keeps up, still a
    // fixed bound (§8.7.6 "never unbounded buffering").
    void enlarge_send_buffer();
    int fd() const { return fd_; }

private:
    int fd_;
};

}  // namespace eventd::server
