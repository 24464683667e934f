// [forward]: nats::PullConsumer, the collector's reader of JetStream, against a real nats-server:
// each call hands out at most the batch asked for however many messages its requests have
// queued (nats.c 3.4's natsSubscription_Fetch overflowed its array there: nats.c #749, the
// collector's heap corruption), every message exactly once and in order, an empty consumer
// returns nothing, and the acknowledgement replies do what JetStream says (+ACK, -NAK with a
// delay, +TERM).
#include <nats/nats.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "nats/pull_consumer.hpp"
#include "support/nats_fixture.hpp"
#include "support/temp_dir.hpp"

namespace eventd::query_it {
namespace {

using std::chrono::milliseconds;

constexpr int kMessages = 600;

// A server with a stream PULL (subjects pull.>) of kMessages messages (bodies "0", "1", …), a
// durable pull consumer "reader" of it that acknowledges explicitly, as the collector makes
// its own, and a PullConsumer reading it.
struct Consumer {
    test_support::TempDir dir;
    NatsServer server{dir.str()};
    natsConnection* connection = nullptr;
    jsCtx* js = nullptr;
    std::unique_ptr<nats::PullConsumer> pull;

    Consumer() {
        REQUIRE(natsConnection_ConnectTo(&connection, server.url().c_str()) == NATS_OK);
        REQUIRE(natsConnection_JetStream(&js, connection, nullptr) == NATS_OK);
        jsStreamConfig stream;
        jsStreamConfig_Init(&stream);
        stream.Name = "PULL";
        const char* subjects[] = {"pull.>"};
        stream.Subjects = subjects;
        stream.SubjectsLen = 1;
        REQUIRE(js_AddStream(nullptr, js, &stream, nullptr, nullptr) == NATS_OK);
        jsConsumerConfig consumer;
        jsConsumerConfig_Init(&consumer);
        consumer.Durable = "reader";
        consumer.AckPolicy = js_AckExplicit;
        consumer.AckWait = 30'000'000'000;  // nothing comes again unless asked to (nak)
        REQUIRE(js_AddConsumer(nullptr, js, "PULL", &consumer, nullptr, nullptr) == NATS_OK);
        for (int i = 0; i < kMessages; ++i) publish(i);
        auto opened = nats::PullConsumer::open(connection, "PULL", "reader");
        REQUIRE(opened);
        pull = std::move(*opened);
    }
    ~Consumer() {
        pull.reset();
        jsCtx_Destroy(js);
        natsConnection_Destroy(connection);
    }
    void publish(int i) const {
        const std::string body = std::to_string(i);
        REQUIRE(js_Publish(nullptr, js, "pull.x", body.data(), static_cast<int>(body.size()), nullptr, nullptr) ==
                NATS_OK);
    }
    int64_t ack_pending() const {
        jsConsumerInfo* info = nullptr;
        REQUIRE(js_GetConsumerInfo(&info, js, "PULL", "reader", nullptr, nullptr) == NATS_OK);
        const int64_t n = info->NumAckPending;
        jsConsumerInfo_Destroy(info);
        return n;
    }
};

int body_of(natsMsg* m) { return std::stoi(std::string(natsMsg_GetData(m), natsMsg_GetDataLength(m))); }

// Each message's body onto `received`, acknowledged and freed.
void take(const Consumer& c, const std::vector<natsMsg*>& messages, std::vector<int>& received) {
    for (natsMsg* m : messages) {
        received.push_back(body_of(m));
        nats::ack(c.connection, m);
        natsMsg_Destroy(m);
    }
}

}  // namespace

TEST_CASE("a pull consumer hands out at most its batch, every message once and in order", "[forward]") {
    Consumer c;

    // A large batch first: its requests run ahead, so most of the stream is queued in the
    // inbox when the smaller batches after it are asked for — more than half of each of them,
    // the case nats.c 3.4 wrote past its array in.
    const std::vector<size_t> batches = {400, 250, 7, 1, 120, 33};
    std::vector<int> received;
    for (size_t call = 0; received.size() < size_t(kMessages); ++call) {
        const size_t batch = batches[call % batches.size()];
        auto messages = c.pull->next(batch, 0, milliseconds(5000));
        REQUIRE(messages);
        INFO("call " << call << ", batch " << batch << ", " << received.size() << " received before");
        REQUIRE(!messages->empty());  // the stream has more: it arrives within the wait
        CHECK(messages->size() <= batch);
        for (natsMsg* m : *messages) CHECK(nats::stream_sequence(m) == uint64_t(body_of(m)) + 1);
        take(c, *messages, received);
    }
    REQUIRE(received.size() == size_t(kMessages));
    for (int i = 0; i < kMessages; ++i) REQUIRE(received[i] == i);

    // Nothing left: a call waits and returns none.
    auto none = c.pull->next(50, 0, milliseconds(300));
    REQUIRE(none);
    CHECK(none->empty());
    REQUIRE(natsConnection_FlushTimeout(c.connection, 5000) == NATS_OK);
    CHECK(c.ack_pending() == 0);  // every +ACK reached the server

    // A message published while a call waits arrives in it.
    c.publish(kMessages);
    auto late = c.pull->next(10, 0, milliseconds(5000));
    REQUIRE(late);
    REQUIRE(late->size() == 1);
    CHECK(body_of(late->front()) == kMessages);
    // -NAK with a delay: the same message again, not before the delay has passed.
    const auto nak_at = std::chrono::steady_clock::now();
    nats::nak(c.connection, late->front(), milliseconds(500));
    natsMsg_Destroy(late->front());
    auto again = c.pull->next(10, 0, milliseconds(5000));
    REQUIRE(again);
    REQUIRE(again->size() == 1);
    CHECK(body_of(again->front()) == kMessages);
    CHECK(std::chrono::steady_clock::now() - nak_at >= milliseconds(400));
    // +TERM: never again, and no longer pending.
    nats::term(c.connection, again->front());
    natsMsg_Destroy(again->front());
    auto after_term = c.pull->next(10, 0, milliseconds(1500));
    REQUIRE(after_term);
    CHECK(after_term->empty());
    CHECK(c.ack_pending() == 0);
}

// max_bytes ends a request early (409 Message Size Exceeds MaxBytes, with its undelivered
// count): the consumer asks again and nothing stalls or is lost.
TEST_CASE("a pull consumer with a byte limit per request still reads everything", "[forward]") {
    Consumer c;
    std::vector<int> received;
    while (received.size() < size_t(kMessages)) {
        auto messages = c.pull->next(100, 2000, milliseconds(1500));  // a few dozen messages' worth; less than a lost request's timeout
        REQUIRE(messages);
        INFO(received.size() << " received");
        REQUIRE(!messages->empty());
        take(c, *messages, received);
    }
    for (int i = 0; i < kMessages; ++i) REQUIRE(received[i] == i);
}

}  // namespace eventd::query_it
