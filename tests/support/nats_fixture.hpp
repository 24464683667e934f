// A real nats-server with JetStream for the forwarder and collector tests (issue 12): started
// on a free loopback port with its store in a directory of the test, stopped and started again
// on the same port and store (an outage), and read back through nats.c: every message a stream
// holds, with its subject, headers and body. NatsCluster (issue 27): three such servers joined
// in a JetStream cluster, each killed and restarted on its own.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
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

// How a stream is replicated, from its info ($JS.API.STREAM.INFO, answered by its leader).
struct StreamReplication {
    int64_t configured = 0;  // config.num_replicas
    std::string leader;      // cluster.leader: the leading server's server_name
    std::vector<std::pair<std::string, bool>> followers;  // cluster.replicas: server_name, current
};

// What the tests reach through nats.c — one server or a cluster: url() is what NatsUrl is set
// to, and reading connects to any server of it that answers.
class NatsService {
public:
    virtual ~NatsService() = default;
    virtual std::string url() const = 0;

    // Messages in `stream` (0 when the stream does not exist yet).
    uint64_t count(const std::string& stream) const;
    // Publish one message into JetStream and wait for its ack (REQUIREs it): what a hostile or
    // broken publisher could send.
    void publish(const std::string& subject, const std::vector<std::pair<std::string, std::string>>& headers,
                 const std::vector<uint8_t>& body) const;
    std::vector<StoredMessage> messages(const std::string& stream) const;
    // nullopt while the stream does not exist or no leader answers for it (an election).
    std::optional<StreamReplication> replication(const std::string& stream) const;

protected:
    explicit NatsService(std::optional<NatsTls> tls) : tls_(std::move(tls)) {}
    std::optional<NatsTls> tls_;
};

// A node of a JetStream cluster (NatsCluster): its server_name, ports and routes.
struct NatsNode {
    std::string name;     // server_name
    std::string cluster;  // the cluster's name
    int client_port = 0, cluster_port = 0, monitor_port = 0;
    std::vector<int> routes;  // the other nodes' cluster ports
};

class NatsServer : public NatsService {
public:
    // REQUIREs that it accepts connections.
    explicit NatsServer(std::string dir, std::optional<NatsTls> tls = std::nullopt);
    // A cluster's node, configured by a file in `dir` (NatsCluster).
    NatsServer(std::string dir, NatsNode node);
    ~NatsServer() override;
    std::string url() const override {
        return (tls_ ? "tls://127.0.0.1:" : "nats://127.0.0.1:") + std::to_string(port_);
    }
    void stop();  // SIGTERM
    void kill();  // SIGKILL: a crash (the stream's files as the process left them)
    void start();
    bool running() const { return process_ != nullptr; }
    std::string log() const;

private:
    std::string dir_;
    std::optional<NatsNode> node_;
    int port_ = 0;
    std::unique_ptr<kmes::it::DaemonProcess> process_;
};

// Three (or `nodes`) nats-servers with JetStream joined in a cluster on loopback, each with its
// own store, client, cluster and monitoring port. url() lists every node's client URL,
// comma-separated.
class NatsCluster : public NatsService {
public:
    // REQUIREs every node healthy and a JetStream meta leader that all of them know.
    explicit NatsCluster(const std::string& dir, size_t nodes = 3);
    std::string url() const override;
    size_t size() const { return nodes_.size(); }
    const std::string& name(size_t i) const { return specs_.at(i).name; }
    void kill(size_t i);  // SIGKILL
    // Again on its ports and store; REQUIREs it healthy: caught up with the meta leader and
    // every stream it replicates (its /healthz).
    void start(size_t i);
    // Which node leads `stream`; nullopt while none does (or the stream does not exist).
    std::optional<size_t> leader_of(const std::string& stream) const;
    // Every node's log, headed by its name (for failure messages).
    std::string logs() const;

private:
    bool healthy(size_t i) const;
    std::string meta_leader(size_t i) const;  // as node i's /jsz says ("" when it knows none)

    std::string dir_;
    std::vector<NatsNode> specs_;
    std::vector<std::unique_ptr<NatsServer>> nodes_;
};

}  // namespace eventd::query_it
