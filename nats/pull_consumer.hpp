// A JetStream pull consumer read over an inbox of our own (JetStream's pull protocol:
// requests to $JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>, messages and status replies
// to the request's reply subject), with requests kept outstanding ahead of the reader.
//
// Why not nats.c's natsSubscription_Fetch: in nats.c 3.4 (Debian 12's libnats3.4) it writes
// past its message array when messages of an earlier request are still queued and more than
// half of the new batch (nats.c #749, fixed in 3.9) — the collector's heap was corrupted by it
// whenever a fetch ended before a large batch of packed messages had all arrived. Here
// messages go into a std::vector, and at most `max_messages` of them per call whatever is
// queued. Requests run ahead: while the caller converts one batch, the next one arrives.
#pragma once

#include <nats/nats.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/result.hpp"

namespace eventd::nats {

class PullConsumer {
public:
    // Subscribes an inbox for `durable` of `stream` (which must exist: its configuration —
    // filter, acknowledgement policy — is the server's).
    static base::Result<std::unique_ptr<PullConsumer>> open(natsConnection* connection, const std::string& stream,
                                                            const std::string& durable);
    ~PullConsumer();
    PullConsumer(const PullConsumer&) = delete;
    PullConsumer& operator=(const PullConsumer&) = delete;

    // The messages that have arrived, oldest first, at most `max_messages` (≥ 1); waits up to
    // `wait` for the first one and returns none when it timed out. Requests for up to two
    // batches of `max_messages` and `max_bytes` each are kept on their way. The caller owns
    // the messages (natsMsg_Destroy) and acknowledges them with ack/nak/term below. An error:
    // the connection is gone or the server refuses the consumer (deleted, say).
    base::Result<std::vector<natsMsg*>> next(size_t max_messages, int64_t max_bytes, std::chrono::milliseconds wait);

private:
    PullConsumer(natsConnection* connection, std::string request_subject, std::string inbox);
    base::Status request_more(size_t max_messages, int64_t max_bytes);
    // A status reply (no data, a Status header): what it says of the requests on their way.
    base::Status on_status(natsMsg* status);

    natsConnection* connection_;
    std::string request_subject_;  // $JS.API.CONSUMER.MSG.NEXT.<stream>.<durable>
    std::string inbox_;            // request n replies to <inbox>.<n>
    natsSubscription* subscription_ = nullptr;  // <inbox>.*
    uint64_t requests_sent_ = 0;
    int64_t outstanding_ = 0;  // messages requested, minus delivered, minus those a status ended
    std::chrono::steady_clock::time_point last_request_{};
};

// JetStream's acknowledgement replies to a message read by a PullConsumer (to its reply
// subject): stored (+ACK), again after `delay` (-NAK), never again (+TERM). Fire and forget,
// as nats.c's natsMsg_Ack: a lost one means one more delivery, and a lost connection shows
// at the next read.
void ack(natsConnection* connection, natsMsg* msg);
void nak(natsConnection* connection, natsMsg* msg, std::chrono::milliseconds delay);
void term(natsConnection* connection, natsMsg* msg);

// The message's sequence in its stream (from its reply subject), 0 when it has none.
// (natsMsg_GetSequence is only set for messages read with js_GetMsg.)
uint64_t stream_sequence(natsMsg* msg);

// When the stream stored the message (ns since the epoch, from its reply subject), 0 when it
// has none: the same on every delivery of the message.
uint64_t stored_at_ns(natsMsg* msg);

}  // namespace eventd::nats
