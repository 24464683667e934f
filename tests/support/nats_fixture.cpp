#include "support/nats_fixture.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <nats/nats.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

#include <catch2/catch.hpp>

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

bool accepts(int port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    return ok;
}

// A JetStream context for reading, closed with the object.
struct Reader {
    natsOptions* options = nullptr;
    natsConnection* nc = nullptr;
    jsCtx* js = nullptr;
    Reader(const std::string& url, const std::optional<NatsTls>& tls) {
        REQUIRE(natsOptions_Create(&options) == NATS_OK);
        REQUIRE(natsOptions_SetURL(options, url.c_str()) == NATS_OK);
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
    : dir_(std::move(dir)), tls_(std::move(tls)), port_(free_port()) {
    start();
}

NatsServer::~NatsServer() { stop(); }

void NatsServer::start() {
    kmes::it::DaemonCommand c;
    c.name = "nats-server";
    c.args = {kmes::it::path_from_env("NATS_SERVER"), "-js", "-a", "127.0.0.1", "-p", std::to_string(port_), "-sd", dir_ + "/jetstream"};
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

void NatsServer::publish(const std::string& subject, const std::vector<std::pair<std::string, std::string>>& headers,
                         const std::vector<uint8_t>& body) {
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

uint64_t NatsServer::count(const std::string& stream) {
    Reader r(url(), tls_);
    uint64_t n = 0;
    return r.range(stream, &n) ? n : 0;
}

std::vector<StoredMessage> NatsServer::messages(const std::string& stream) {
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

}  // namespace eventd::query_it
