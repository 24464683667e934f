// eventd-forward's side of NATS JetStream (nats.c, Debian libnats-dev): one connection per
// forwarding session, the stream checked or created, records published asynchronously with
// their Nats-Msg-Id, acknowledgements counted into an AckWindow (ack_window.hpp).
//
// Publishing is plain NATS publishing with a reply subject, which is all a JetStream publish is
// on the wire: each message's reply subject is `<inbox>.<message number>`, one subscription to
// `<inbox>.*` receives JetStream's acks, and the number leads straight to the AckWindow's slot.
// (nats.c's js_PublishMsgAsync does the same but keeps every message, a hash entry and a timer
// entry per message until its ack, and parses each ack into allocated strings: measured, it
// was half of the forwarder's CPU — docs/PERFORMANCE.md §12.)
//
// The connection does not reconnect by itself: a lost connection, a refused publish or an ack
// that does not come within AckTimeoutMs fails the session (AckWindow::failure), and the
// forwarder starts a new one from its persisted cursor (forwarder.hpp) — one recovery path for
// every failure, and JetStream's de-duplication makes the replay harmless.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "forward/ack_window.hpp"
#include "forward/config.hpp"

// nats.c's handle types, without its header.
struct __natsConnection;
struct __natsSubscription;
struct __natsMsg;
typedef struct __natsConnection natsConnection;
typedef struct __natsSubscription natsSubscription;
typedef struct __natsMsg natsMsg;

namespace eventd::forward {

class JetStream {
public:
    // Connect (AckTimeoutMs bounds the connect too), with the configured credentials and TLS.
    // `on_failure` runs on a nats.c thread when the session fails (to wake the reader).
    static base::Result<std::unique_ptr<JetStream>> connect(const ForwardConfig& config, AckWindow& window,
                                                           std::function<void()> on_failure);
    ~JetStream();
    JetStream(const JetStream&) = delete;
    JetStream& operator=(const JetStream&) = delete;

    // The stream `config.stream` exists afterwards: created (file storage, subjects
    // "<SubjectPrefix>.>", duplicate window DuplicateWindowSeconds, Replicas copies) when
    // missing. Warnings for a stream that exists but whose duplicate window is shorter than
    // DuplicateWindowSeconds, whose replica count is not Replicas, or whose subjects do not name
    // the prefix.
    base::Status ensure_stream(std::vector<std::string>& warnings);

    struct Header {
        const char* key;
        const char* value;
    };
    // Publish `body` (packing `records` records) asynchronously with the headers
    // `Nats-Msg-Id: msg_id` and `headers`; blocks while MaxPendingAcks messages are outstanding
    // (at most AckTimeoutMs without an ack: then a failure).
    base::Status publish(const char* subject, const char* msg_id, std::span<const Header> headers,
                         std::span<const uint8_t> body, uint32_t records = 1);
    // The largest message the server accepts (its max_payload), headers included.
    int64_t max_payload() const;
    // Wait up to `timeout_ms` for every outstanding ack.
    base::Status complete(int64_t timeout_ms);

private:
    JetStream(const ForwardConfig& config, AckWindow& window, std::function<void()> on_failure);
    // nats.c's thread, for each message on <inbox>.*: count the ack (or the failure).
    static void on_ack(natsConnection*, natsSubscription*, natsMsg* msg, void* closure);
    struct Handles;
    const ForwardConfig& config_;
    AckWindow& window_;
    std::function<void()> on_failure_;
    std::unique_ptr<Handles> handles_;
};

}  // namespace eventd::forward
