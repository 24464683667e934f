// eventd-forward's side of NATS JetStream (nats.c, Debian libnats-dev): one connection per
// forwarding session, the stream checked or created, records published asynchronously with
// their Nats-Msg-Id, acknowledgements counted into an AckWindow (ack_window.hpp).
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

namespace eventd::forward {

class JetStream {
public:
    // Connect (AckTimeoutMs bounds the connect too), with the configured credentials and TLS.
    // `on_failure` runs on a nats.c thread when the session fails (to wake the reader).
    static kmes::Result<std::unique_ptr<JetStream>> connect(const ForwardConfig& config, AckWindow& window,
                                                           std::function<void()> on_failure);
    ~JetStream();
    JetStream(const JetStream&) = delete;
    JetStream& operator=(const JetStream&) = delete;

    // The stream `config.stream` exists afterwards: created (file storage, subjects
    // "<SubjectPrefix>.>", duplicate window DuplicateWindowSeconds) when missing. Warnings for a
    // stream that exists but whose duplicate window is shorter than DuplicateWindowSeconds or
    // whose subjects do not name the prefix.
    kmes::Status ensure_stream(std::vector<std::string>& warnings);

    struct Header {
        const char* key;
        std::string value;
    };
    // Publish `body` asynchronously; blocks while MaxPendingAcks are outstanding.
    kmes::Status publish(const std::string& subject, const std::string& msg_id, const std::vector<Header>& headers,
                         std::span<const uint8_t> body);
    // Wait up to `timeout_ms` for every outstanding ack.
    kmes::Status complete(int64_t timeout_ms);

private:
    JetStream(const ForwardConfig& config, AckWindow& window, std::function<void()> on_failure);
    struct Handles;
    const ForwardConfig& config_;
    AckWindow& window_;
    std::function<void()> on_failure_;
    std::unique_ptr<Handles> handles_;
};

}  // namespace eventd::forward
