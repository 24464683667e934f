// A real nats-server with JetStream for the forwarder tests (issue 12): started on a free
// loopback port with its store in a directory of the test, stopped and started again on the
// same port and store (an outage), and read back through nats.c: every message a stream holds,
// with its subject, headers and body.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/daemon_process.hpp"

namespace eventd::query_it {

struct StoredMessage {
    uint64_t sequence = 0;
    std::string subject;
    std::map<std::string, std::string> headers;
    std::vector<uint8_t> data;
};

// TLS: the server's certificate and key, signed by `ca_file`, which the reader trusts.
struct NatsTls {
    std::string cert_file, key_file, ca_file;
};

// With openssl, in `dir`: a CA (ca.pem), a server certificate for 127.0.0.1 signed by it
// (server.pem, server.key) and an unrelated CA (other.pem). REQUIREs success; the server's part.
NatsTls make_test_certificates(const std::string& dir);

class NatsServer {
public:
    // REQUIREs that it accepts connections.
    explicit NatsServer(std::string dir, std::optional<NatsTls> tls = std::nullopt);
    ~NatsServer();
    std::string url() const { return (tls_ ? "tls://127.0.0.1:" : "nats://127.0.0.1:") + std::to_string(port_); }
    void stop();  // SIGTERM
    void kill();  // SIGKILL: a crash (the stream's files as the process left them)
    void start();

    // Messages in `stream` (0 when the stream does not exist yet).
    uint64_t count(const std::string& stream);
    // Publish one message into JetStream and wait for its ack (REQUIREs it): what a hostile or
    // broken publisher could send.
    void publish(const std::string& subject, const std::vector<std::pair<std::string, std::string>>& headers,
                 const std::vector<uint8_t>& body);
    std::vector<StoredMessage> messages(const std::string& stream);

private:
    std::string dir_;
    std::optional<NatsTls> tls_;
    int port_ = 0;
    std::unique_ptr<kmes::it::DaemonProcess> process_;
};

}  // namespace eventd::query_it
