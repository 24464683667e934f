#include "support/nats_fixture.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <nats/nats.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "nats/client.hpp"
#include "support/eventctl_runner.hpp"
#include "support/eventually.hpp"

namespace eventd::query_it {
namespace {

int free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t len = sizeof a;
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    ::close(fd);
    return ntohs(a.sin_port);
}

// Distinct free ports (free_port() may hand out one it handed out before).
std::vector<int> free_ports(size_t n) {
    std::set<int> seen;
    std::vector<int> out;
    while (out.size() < n)
        if (const int p = free_port(); seen.insert(p).second) out.push_back(p);
    return out;
}

// A TCP connection to 127.0.0.1:port (2 s timeouts), or -1.
int connect_loopback(int port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const timeval timeout{2, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
    ::close(fd);
    return -1;
}

bool accepts(int port) {
    const int fd = connect_loopback(port);
    if (fd >= 0) ::close(fd);
    return fd >= 0;
}

// The body of a 200 answer to GET `path` on nats-server's monitoring port; nullopt otherwise.
std::optional<std::string> monitoring_get(int port, const std::string& path) {
    const int fd = connect_loopback(port);
    if (fd < 0) return std::nullopt;
    const std::string request = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    std::string reply;
    if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == ssize_t(request.size())) {
        char buffer[4096];
        for (ssize_t n; (n = ::recv(fd, buffer, sizeof buffer, 0)) > 0;) reply.append(buffer, size_t(n));
    }
    ::close(fd);
    const size_t body = reply.find("\r\n\r\n");
    if (reply.rfind("HTTP/1.", 0) != 0 || reply.compare(8, 5, " 200 ") != 0 || body == std::string::npos)
        return std::nullopt;
    return reply.substr(body + 4);
}

// A JetStream context for reading, closed with the object.
struct Reader {
    natsOptions* options = nullptr;
    natsConnection* nc = nullptr;
    jsCtx* js = nullptr;
    // `urls`: a NatsUrl, one server or a cluster's list (the first that answers).
    Reader(const std::string& urls, const std::optional<NatsTls>& tls) {
        REQUIRE(natsOptions_Create(&options) == NATS_OK);
        const auto servers = eventd::nats::apply_servers(options, urls);
        INFO((servers ? "" : servers.error().message));
        REQUIRE(servers);
        if (tls) {
            REQUIRE(natsOptions_SetSecure(options, true) == NATS_OK);
            REQUIRE(natsOptions_LoadCATrustedCertificates(options, tls->ca_file.c_str()) == NATS_OK);
        }
        REQUIRE(natsConnection_Connect(&nc, options) == NATS_OK);
        REQUIRE(natsConnection_JetStream(&js, nc, nullptr) == NATS_OK);
    }
    ~Reader() {
        if (js) jsCtx_Destroy(js);
        if (nc) natsConnection_Destroy(nc);
        if (options) natsOptions_Destroy(options);
    }
    // (first, last) sequence; nullopt when the stream does not exist.
    std::optional<std::pair<uint64_t, uint64_t>> range(const std::string& stream, uint64_t* messages = nullptr) {
        jsStreamInfo* si = nullptr;
        jsErrCode code{};
        if (js_GetStreamInfo(&si, js, stream.c_str(), nullptr, &code) != NATS_OK) return std::nullopt;
        auto r = std::make_pair(si->State.FirstSeq, si->State.LastSeq);
        if (messages) *messages = si->State.Msgs;
        jsStreamInfo_Destroy(si);
        return r;
    }
};

}  // namespace

NatsTls make_test_certificates(const std::string& d) {
    const RunResult made = run_command(
        {"/bin/sh", "-c",
         "cd " + d +
             " && openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=eventd-test-ca"
             " && openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=127.0.0.1"
             " && printf 'subjectAltName=IP:127.0.0.1\\n' > ext.cnf"
             " && openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2"
             " -extfile ext.cnf"
             " && openssl req -x509 -newkey rsa:2048 -nodes -keyout other.key -out other.pem -days 2 -subj /CN=other"},
        std::chrono::seconds(60));
    INFO(made.err);
    REQUIRE(made.exit_code == 0);
    return NatsTls{d + "/server.pem", d + "/server.key", d + "/ca.pem"};
}

NatsServer::NatsServer(std::string dir, std::optional<NatsTls> tls)
    : NatsService(std::move(tls)), dir_(std::move(dir)), port_(free_port()) {
    start();
}

NatsServer::NatsServer(std::string dir, NatsNode node)
    : NatsService(std::nullopt), dir_(std::move(dir)), node_(std::move(node)), port_(node_->client_port) {
    std::filesystem::create_directories(dir_);
    // JetStream in a cluster needs a server_name and the cluster's name: a file, not flags.
    std::string routes;
    for (const int p : node_->routes)
        routes += (routes.empty() ? "" : ", ") + ("nats-route://127.0.0.1:" + std::to_string(p));
    std::ofstream(dir_ + "/nats.conf") << "server_name: " << node_->name << "\n"
                                       << "listen: 127.0.0.1:" << node_->client_port << "\n"
                                       << "http: 127.0.0.1:" << node_->monitor_port << "\n"
                                       << "jetstream { store_dir: \"" << dir_ << "/jetstream\" }\n"
                                       << "cluster {\n  name: " << node_->cluster << "\n"
                                       << "  listen: 127.0.0.1:" << node_->cluster_port << "\n"
                                       << "  routes: [" << routes << "]\n}\n";
    start();
}

NatsServer::~NatsServer() { stop(); }

std::string NatsServer::log() const { return kmes::it::read_text(dir_ + "/nats-server.log"); }

void NatsServer::start() {
    kmes::it::DaemonCommand c;
    c.name = "nats-server";
    c.args = {kmes::it::path_from_env("NATS_SERVER"), "-js"};
    if (node_)
        c.args.insert(c.args.end(), {"-c", dir_ + "/nats.conf"});
    else
        c.args.insert(c.args.end(), {"-a", "127.0.0.1", "-p", std::to_string(port_), "-sd", dir_ + "/jetstream"});
    if (tls_) c.args.insert(c.args.end(), {"--tls", "--tlscert", tls_->cert_file, "--tlskey", tls_->key_file});
    c.log_path = dir_ + "/nats-server.log";
    c.notify_path = dir_ + "/nats.notify";
    c.ready_timeout = std::chrono::seconds(10);
    c.stop_timeout = std::chrono::seconds(10);
    process_ = std::make_unique<kmes::it::DaemonProcess>(c);
    const auto listening = [&] {
        if (accepts(port_)) return true;
        INFO(process_->log());
        REQUIRE(process_->running());
        return false;
    };
    const bool ready = test_support::eventually(listening, std::chrono::seconds(10), std::chrono::milliseconds(20));
    INFO(process_->log());
    REQUIRE(ready);
}

void NatsServer::stop() {
    if (!process_) return;
    process_->terminate();
    process_.reset();
}

void NatsServer::kill() {
    if (!process_) return;
    process_->kill();
    process_.reset();
}

void NatsService::publish(const std::string& subject, const std::vector<std::pair<std::string, std::string>>& headers,
                          const std::vector<uint8_t>& body) const {
    Reader r(url(), tls_);
    natsMsg* msg = nullptr;
    REQUIRE(natsMsg_Create(&msg, subject.c_str(), nullptr, reinterpret_cast<const char*>(body.data()),
                           static_cast<int>(body.size())) == NATS_OK);
    for (const auto& [key, value] : headers) REQUIRE(natsMsgHeader_Set(msg, key.c_str(), value.c_str()) == NATS_OK);
    jsPubAck* ack = nullptr;
    const natsStatus s = js_PublishMsg(&ack, r.js, msg, nullptr, nullptr);
    natsMsg_Destroy(msg);
    if (ack) jsPubAck_Destroy(ack);
    REQUIRE(s == NATS_OK);
}

uint64_t NatsService::count(const std::string& stream) const {
    Reader r(url(), tls_);
    uint64_t n = 0;
    return r.range(stream, &n) ? n : 0;
}

std::vector<StoredMessage> NatsService::messages(const std::string& stream) const {
    Reader r(url(), tls_);
    std::vector<StoredMessage> out;
    const auto range = r.range(stream);
    if (!range) return out;
    for (uint64_t seq = range->first; seq <= range->second && range->second > 0; ++seq) {
        natsMsg* msg = nullptr;
        jsErrCode code{};
        if (js_GetMsg(&msg, r.js, stream.c_str(), seq, nullptr, &code) != NATS_OK) continue;  // deleted
        StoredMessage m;
        m.sequence = seq;
        m.subject = natsMsg_GetSubject(msg);
        const char** keys = nullptr;
        int n = 0;
        if (natsMsgHeader_Keys(msg, &keys, &n) == NATS_OK) {
            for (int i = 0; i < n; ++i) {
                const char* value = nullptr;
                if (natsMsgHeader_Get(msg, keys[i], &value) == NATS_OK) m.headers[keys[i]] = value;
            }
            free(keys);
        }
        const auto* data = reinterpret_cast<const uint8_t*>(natsMsg_GetData(msg));
        m.data.assign(data, data + natsMsg_GetDataLength(msg));
        natsMsg_Destroy(msg);
        out.push_back(std::move(m));
    }
    return out;
}

std::optional<StreamReplication> NatsService::replication(const std::string& stream) const {
    Reader r(url(), tls_);
    jsStreamInfo* si = nullptr;
    jsErrCode code{};
    if (js_GetStreamInfo(&si, r.js, stream.c_str(), nullptr, &code) != NATS_OK) return std::nullopt;
    StreamReplication out;
    out.configured = si->Config->Replicas;
    if (si->Cluster && si->Cluster->Leader) out.leader = si->Cluster->Leader;
    for (int i = 0; si->Cluster && i < si->Cluster->ReplicasLen; ++i)
        out.followers.emplace_back(si->Cluster->Replicas[i]->Name, si->Cluster->Replicas[i]->Current);
    jsStreamInfo_Destroy(si);
    if (out.leader.empty()) return std::nullopt;  // answered while electing
    return out;
}

NatsCluster::NatsCluster(const std::string& dir, size_t nodes) : NatsService(std::nullopt), dir_(dir) {
    const std::vector<int> ports = free_ports(3 * nodes);
    for (size_t i = 0; i < nodes; ++i)
        specs_.push_back(
            {"n" + std::to_string(i), "eventd-test", ports[3 * i], ports[3 * i + 1], ports[3 * i + 2], {}});
    for (size_t i = 0; i < nodes; ++i)
        for (size_t j = 0; j < nodes; ++j)
            if (j != i) specs_[i].routes.push_back(specs_[j].cluster_port);
    for (size_t i = 0; i < nodes; ++i) nodes_.push_back(std::make_unique<NatsServer>(dir_ + "/" + name(i), specs_[i]));
    // Streams can be created once a meta leader is elected and every node follows it.
    const bool formed = test_support::eventually(
        [&] {
            const std::string leader = meta_leader(0);
            for (size_t i = 0; i < size(); ++i)
                if (leader.empty() || meta_leader(i) != leader || !healthy(i)) return false;
            return true;
        },
        std::chrono::seconds(30), std::chrono::milliseconds(100));
    INFO(logs());
    REQUIRE(formed);
}

std::string NatsCluster::url() const {
    std::string list;
    for (const auto& node : nodes_) list += (list.empty() ? "" : ",") + node->url();
    return list;
}

void NatsCluster::kill(size_t i) { nodes_.at(i)->kill(); }

void NatsCluster::start(size_t i) {
    nodes_.at(i)->start();
    const bool current =
        test_support::eventually([&] { return healthy(i); }, std::chrono::seconds(30), std::chrono::milliseconds(100));
    INFO(logs());
    REQUIRE(current);
}

std::optional<size_t> NatsCluster::leader_of(const std::string& stream) const {
    const auto r = replication(stream);
    for (size_t i = 0; r && i < size(); ++i)
        if (name(i) == r->leader) return i;
    return std::nullopt;
}

bool NatsCluster::healthy(size_t i) const {
    // 200 only when this node's JetStream is current with the meta leader and with every
    // stream and consumer it replicates (nats-server's /healthz).
    return nodes_.at(i)->running() && monitoring_get(specs_.at(i).monitor_port, "/healthz").has_value();
}

std::string NatsCluster::meta_leader(size_t i) const {
    const auto body = monitoring_get(specs_.at(i).monitor_port, "/jsz");
    if (!body) return "";
    const auto jsz = nlohmann::json::parse(*body, nullptr, false);
    const nlohmann::json::json_pointer leader("/meta_cluster/leader");
    if (!jsz.is_object() || !jsz.contains(leader) || !jsz[leader].is_string()) return "";
    return jsz[leader].get<std::string>();
}

std::string NatsCluster::logs() const {
    std::string text;
    for (size_t i = 0; i < size(); ++i) text += "--- nats-server " + name(i) + "\n" + nodes_.at(i)->log();
    return text;
}

}  // namespace eventd::query_it
