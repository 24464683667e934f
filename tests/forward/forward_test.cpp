// eventd-forward's pure parts (forward/): the configuration's checks, subjects and message ids,
// the query it sends, and the ack window's rule for the cursor it may persist — including
// acknowledgements that arrive out of order from another thread.
#include <atomic>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "base/jittered_backoff.hpp"
#include "forward/ack_window.hpp"
#include "forward/config.hpp"
#include "forward/packer.hpp"
#include "forward/record_id.hpp"
#include "thread_state.hpp"

namespace {

using nlohmann::json;
using namespace eventd::forward;

std::string config_error(const json& doc) {
    auto r = parse_forward_config(doc);
    REQUIRE_FALSE(r);
    return r.error().message;
}

}  // namespace

TEST_CASE("forward configuration: defaults, required keys and refusals naming the key", "[forward]") {
    auto ok = parse_forward_config(json{{"NatsUrl", "nats://127.0.0.1:4222"}, {"Typo", 1}});
    REQUIRE(ok);
    CHECK(ok->config.stream == "EVENTD");
    CHECK(ok->config.subject_prefix == "eventd");
    CHECK(ok->config.eventd_socket_path == "/run/eventd/query.sock");
    CHECK(ok->config.state_directory == "/var/lib/eventd-forward");
    CHECK(ok->config.query == "EVENTS");
    CHECK_FALSE(ok->config.host_name.empty());  // the machine's
    CHECK(ok->warnings == std::vector<std::string>{"unknown key Typo ignored"});

    CHECK_THAT(config_error(json::object()), Catch::Contains("NatsUrl is required"));
    CHECK_THAT(config_error(json::array()), Catch::Contains("must be a JSON object"));
    CHECK_THAT(config_error(json{{"NatsUrl", 5}}), Catch::Contains("NatsUrl must be a non-empty string"));
    CHECK_THAT(config_error(json{{"NatsUrl", "x"}, {"Stream", "a b"}}), Catch::Contains("Stream must not contain"));
    CHECK_THAT(config_error(json{{"NatsUrl", "x"}, {"SubjectPrefix", "a..b"}}), Catch::Contains("SubjectPrefix"));
    CHECK_THAT(config_error(json{{"NatsUrl", "x"}, {"SubjectPrefix", "a.>"}}), Catch::Contains("SubjectPrefix"));
    CHECK_THAT(config_error(json{{"NatsUrl", "x"}, {"AckTimeoutMs", 5}}),
               Catch::Contains("AckTimeoutMs must be an integer from 100 to 600000, got 5"));
    CHECK_THAT(config_error(json{{"NatsUrl", "x"}, {"TlsCertFile", "/c"}}), Catch::Contains("TlsKeyFile is needed"));
    CHECK_THAT(config_error(json{{"NatsUrl", "x"}, {"NKey", "UABC"}}), Catch::Contains("NKeySeedFile is needed"));
}

TEST_CASE("forward configuration: NatsUrl lists a cluster's servers, each checked", "[forward]") {
    auto ok = parse_forward_config(json{{"NatsUrl", "nats://a:4222, tls://b:4222 ,c:4222"}});
    REQUIRE(ok);
    CHECK(ok->config.nats_url == "nats://a:4222, tls://b:4222 ,c:4222");  // as written; split on connecting
    CHECK_THAT(config_error(json{{"NatsUrl", "nats://a:4222,,nats://b:4222"}}),
               Catch::Contains("NatsUrl element 2 of 3 ('') is empty"));
    CHECK_THAT(config_error(json{{"NatsUrl", "nats://a:4222,"}}),
               Catch::Contains("NatsUrl element 2 of 2 ('') is empty"));
    CHECK_THAT(
        config_error(json{{"NatsUrl", "nats://a:4222,http://b:4222"}}),
        Catch::Contains("NatsUrl element 2 of 2 ('http://b:4222') has the scheme 'http': use nats:// or tls://"));
    CHECK_THAT(config_error(json{{"NatsUrl", "ws://a:4222"}}),
               Catch::Contains("NatsUrl 'ws://a:4222' has the scheme 'ws'"));
    CHECK_THAT(config_error(json{{"NatsUrl", "nats://a:4222 nats://b:4222"}}), Catch::Contains("contains a space"));
    CHECK_THAT(config_error(json{{"NatsUrl", "nats://a:4222,nats://:4222"}}),
               Catch::Contains("NatsUrl element 2 of 2 ('nats://:4222') names no host"));
    CHECK_THAT(config_error(json{{"NatsUrl", " , "}}), Catch::Contains("NatsUrl element 1 of 2 ('') is empty"));
}

TEST_CASE("forward configuration: Replicas of the stream, 1 to 5", "[forward]") {
    auto defaults = parse_forward_config(json{{"NatsUrl", "nats://a:4222"}});
    REQUIRE(defaults);
    CHECK(defaults->config.replicas == 1);
    // (From text, as a configuration file is read: a number is unsigned there.)
    auto three = parse_forward_config(json::parse(R"({"NatsUrl": "nats://a:4222,nats://b:4222", "Replicas": 3})"));
    REQUIRE(three);
    CHECK(three->config.replicas == 3);
    CHECK(three->warnings.empty());
    CHECK_THAT(config_error(json{{"NatsUrl", "x"}, {"Replicas", 0}}),
               Catch::Contains("Replicas must be an integer from 1 to 5, got 0"));
    CHECK_THAT(config_error(json{{"NatsUrl", "x"}, {"Replicas", 6}}),
               Catch::Contains("Replicas must be an integer from 1 to 5, got 6"));
    CHECK_THAT(config_error(json{{"NatsUrl", "x"}, {"Replicas", "3"}}),
               Catch::Contains("Replicas must be an integer from 1 to 5, got \"3\""));
}

TEST_CASE("forward: the query always streams, once", "[forward]") {
    CHECK(streaming_query("EVENTS") == "EVENTS STREAM");
    CHECK(streaming_query("EVENTS kacs.* stream") == "EVENTS kacs.* stream");
    CHECK(streaming_query("EVENTS STREAM WHERE a == 1") == "EVENTS STREAM WHERE a == 1");
    // The word inside a string literal is not the keyword.
    CHECK(streaming_query(R"(EVENTS WHERE note == "a STREAM \" STREAM")") ==
          R"(EVENTS WHERE note == "a STREAM \" STREAM" STREAM)");
    CHECK(streaming_query("EVENTS WHERE streams == 1") == "EVENTS WHERE streams == 1 STREAM");
    // The lag probe's question: the same records, counted.
    CHECK(counting_query("EVENTS kacs.*") == "EVENTS kacs.* COUNT");
    CHECK(counting_query("EVENTS kacs.* STREAM WHERE a == 1") == "EVENTS kacs.*  WHERE a == 1 COUNT");
    CHECK(counting_query(R"(EVENTS WHERE n == "STREAM")") == R"(EVENTS WHERE n == "STREAM" COUNT)");
}

TEST_CASE("forward: subjects escape every token; message ids are stable", "[forward]") {
    CHECK(escape_token("web-3") == "web-3");
    CHECK(escape_token("web 3.example") == "web%203%2Eexample");
    CHECK(escape_token("a*b>c%") == "a%2Ab%3Ec%25");
    CHECK(escape_token("") == "%");
    CHECK(subject_for("eventd", "h", "kacs.access_denied") == "eventd.h.kacs.access_denied");
    CHECK(subject_for("eventd", "h", "a..b") == "eventd.h.a.%.b");
    CHECK(subject_for("fleet.eu", "h", "x y") == "fleet.eu.h.x%20y");
    // Issue 40: a subject nats-server would refuse (its control line) is never made: a long type
    // goes under a bounded subject naming its hash; each type its own, every time the same.
    const std::string long_type = "app." + std::string(5000, '%');
    const std::string long_subject = subject_for("eventd", "h", long_type);
    CHECK(long_subject.rfind("eventd.h.%LONG.", 0) == 0);
    CHECK(long_subject.size() == std::string("eventd.h.%LONG.").size() + 16);
    CHECK(subject_for("eventd", "h", long_type) == long_subject);
    CHECK(subject_for("eventd", "h", long_type + "x") != long_subject);
    const std::string just_fits = "app." + std::string(1024 - std::string("eventd.h.app.").size(), 'x');
    CHECK(subject_for("eventd", "h", just_fits) == "eventd.h." + just_fits);
    CHECK(subject_for("eventd", "h", just_fits + "x").rfind("eventd.h.%LONG.", 0) == 0);

    const auto kmes = json::to_msgpack(json{{"event_type", "app.login"},
                                            {"boot_id", "b0000000-0000-4000-8000-000000000001"},
                                            {"cpu_id", 3},
                                            {"sequence", 42},
                                            {"timestamp", 1000},
                                            {"user", "alice"}});
    auto keys = record_keys(kmes);
    REQUIRE(keys);
    CHECK(message_id(*keys, kmes) == "b0000000-0000-4000-8000-000000000001:3:42");

    const auto synthetic = json::to_msgpack(json{{"event_type", "synthetic.startup"},
                                                 {"boot_id", "b0000000-0000-4000-8000-000000000001"},
                                                 {"cpu_id", nullptr},
                                                 {"sequence", nullptr},
                                                 {"timestamp", 1000}});
    keys = record_keys(synthetic);
    REQUIRE(keys);
    const std::string id = message_id(*keys, synthetic);
    CHECK(id.rfind("s:b0000000-0000-4000-8000-000000000001:1000:", 0) == 0);
    CHECK(id == message_id(*keys, synthetic));
    auto other = synthetic;
    other.back() ^= 1;  // a different record, the same header
    CHECK(message_id(*keys, other) != id);
    CHECK(stable_hash("") == "cbf29ce484222325");  // FNV-1a 64's offset basis: the same everywhere

    const auto selected = json::to_msgpack(json{{"user", "alice"}});
    CHECK_FALSE(record_keys(selected));
}

TEST_CASE("forward ack window: only a checkpoint whose records and all before are acknowledged persists",
          "[forward]") {
    AckWindow w;
    CHECK(w.reserve() == 1);
    CHECK(w.reserve() == 2);
    w.checkpoint("c1", 10);
    CHECK(w.reserve() == 3);
    w.checkpoint("c2", 20);
    CHECK_FALSE(w.persistable());
    w.acked(2, false);
    CHECK_FALSE(w.persistable());  // 1 is still out
    w.acked(3, true);
    w.acked(3, true);  // a second ack for one message counts once
    CHECK_FALSE(w.persistable());
    w.acked(1, false);
    REQUIRE(w.persistable());
    CHECK(w.persistable()->cursor == "c2");
    CHECK(w.persistable()->newest_event_ns == 20);
    const WindowCounters c = w.counters();
    CHECK(c.published == 3);
    CHECK(c.acked == 3);
    CHECK(c.duplicates == 1);
    CHECK(c.pending == 0);
    // An ack for a number this window never gave out changes nothing.
    w.acked(99, false);
    w.acked(0, false);
    CHECK(w.counters().acked == 3);
    CHECK_FALSE(w.failure());
    // Nothing outstanding: never stalled. A checkpoint with every record acknowledged persists at once.
    CHECK_FALSE(w.fail_if_stalled(std::chrono::milliseconds(0)));
    w.checkpoint("c3", 30);
    CHECK(w.persistable()->cursor == "c3");
    w.failed("connection lost");
    w.failed("a later reason");
    CHECK(w.failure() == std::optional<std::string>("connection lost"));  // the first one is kept
}

TEST_CASE("forward ack window: a full window blocks the reader until an ack; silence is a failure", "[forward]") {
    using namespace std::chrono_literals;
    AckWindow w;
    w.reserve();
    w.reserve();
    CHECK(w.wait_for_room(3, AckWindow::Clock::now()));  // 2 < 3: room at once
    CHECK_FALSE(w.wait_for_room(2, AckWindow::Clock::now() + 20ms));
    const pid_t waiter = kmes::test::current_tid();
    std::thread acker([&] {
        CHECK(kmes::test::wait_until_in_futex(waiter));  // the reader is blocked in wait_for_room
        w.acked(2, false);
    });
    CHECK(w.wait_for_room(2, AckWindow::Clock::now() + 10s));  // woken by the ack
    acker.join();
    CHECK_FALSE(w.wait_drained(AckWindow::Clock::now() + 10ms));  // 1 is still out
    CHECK_FALSE(w.fail_if_stalled(10s));
    std::this_thread::sleep_for(20ms);
    CHECK(w.fail_if_stalled(10ms));
    REQUIRE(w.failure());
    CHECK(w.failure()->find("no acknowledgement from JetStream within 10 ms (1 message outstanding)") != std::string::npos);
    CHECK_FALSE(w.wait_for_room(5, AckWindow::Clock::now() + 10s));  // a failure ends the wait at once
}

TEST_CASE("forward ack window: acks from another thread, in any order, never persist a cursor too early",
          "[forward]") {
    // The reader reserves and checkpoints while an "ack thread" acknowledges in a shuffled
    // order; every persistable cursor seen must cover only acknowledged records.
    constexpr int kRecords = 20000;
    AckWindow w;
    std::vector<std::atomic<bool>> acked(kRecords + 1);
    std::atomic<int> reserved{0};
    std::thread acker([&] {
        std::vector<int> pending;
        int next = 1;
        uint32_t rng = 12345;
        while (next <= kRecords || !pending.empty()) {
            while (next <= reserved.load(std::memory_order_acquire)) pending.push_back(next++);
            if (pending.empty()) {
                std::this_thread::yield();
                continue;
            }
            rng = rng * 1103515245 + 12345;
            const size_t pick = (rng >> 8) % pending.size();
            const int n = pending[pick];
            pending[pick] = pending.back();
            pending.pop_back();
            acked[static_cast<size_t>(n)].store(true, std::memory_order_release);
            w.acked(static_cast<uint64_t>(n), false);
        }
    });
    std::optional<PersistPoint> seen;
    for (int n = 1; n <= kRecords; ++n) {
        REQUIRE(w.reserve() == static_cast<uint64_t>(n));
        reserved.store(n, std::memory_order_release);
        if (n % 7 == 0) w.checkpoint(std::to_string(n), n);
        if (auto p = w.persistable(); p && p != seen) {
            seen = p;
            const int covered = std::stoi(p->cursor);
            for (int i = 1; i <= covered; ++i) REQUIRE(acked[static_cast<size_t>(i)].load(std::memory_order_acquire));
        }
    }
    acker.join();
    REQUIRE(w.persistable());
    CHECK(w.persistable()->cursor == std::to_string(kRecords - kRecords % 7));
    CHECK(w.counters().pending == 0);
}

TEST_CASE("jittered backoff: from 100 ms, doubling to the cap, each wait in [half, whole]; reset starts over",
          "[forward]") {
    using std::chrono::milliseconds;
    base::JitteredBackoff backoff(milliseconds(500));
    for (const int64_t whole : {100, 200, 400, 500, 500}) {
        const auto wait = backoff.next().count();
        CHECK(wait >= whole / 2);
        CHECK(wait <= whole);
    }
    backoff.reset();
    CHECK(backoff.next().count() <= 100);
    base::JitteredBackoff small(milliseconds(10));  // a cap below the first wait bounds it too
    CHECK(small.next().count() <= 10);
}

namespace {

// A sink that keeps what the packer hands over, in order: "m" messages and "c" checkpoints.
struct RecordingSink : PackerSink {
    std::vector<PackedMessage> messages;
    std::vector<std::string> order;  // "m:<records>" or "c:<cursor>"
    base::Status publish(const PackedMessage& m) override {
        messages.push_back(m);
        order.push_back("m:" + std::to_string(m.records));
        return {};
    }
    void checkpoint(const PersistPoint& p) override { order.push_back("c:" + p.cursor); }
};

std::vector<uint8_t> kmes_record(const std::string& type, uint64_t seq, const std::string& boot = "b1") {
    return json::to_msgpack(json{{"event_type", type}, {"boot_id", boot}, {"cpu_id", 0}, {"sequence", seq},
                                 {"timestamp", 1000 + seq}, {"n", seq}});
}

void add(Packer& p, const std::vector<uint8_t>& record, Packer::Clock::time_point now = Packer::Clock::now()) {
    auto keys = record_keys(record);
    REQUIRE(keys);
    REQUIRE(p.add(*keys, record, now));
}

}  // namespace

TEST_CASE("forward packing: a message per type, closed by count, bytes or delay; a msgpack array of the records",
          "[forward]") {
    using namespace std::chrono_literals;
    RecordingSink sink;
    const auto t0 = Packer::Clock::now();
    Packer p(PackLimits{3, 1 << 20, 5ms}, sink);
    add(p, kmes_record("a", 1), t0);
    add(p, kmes_record("b", 2), t0);
    add(p, kmes_record("a", 3), t0);
    CHECK(sink.messages.empty());
    add(p, kmes_record("a", 4), t0);  // the third "a": full
    REQUIRE(sink.messages.size() == 1);
    const PackedMessage& m = sink.messages[0];
    CHECK(m.event_type == "a");
    CHECK(m.boot_id == "b1");
    CHECK(m.records == 3);
    const json body = json::from_msgpack(m.body);
    REQUIRE(body.is_array());
    REQUIRE(body.size() == 3);
    CHECK(body[0]["sequence"] == 1);
    CHECK(body[2]["sequence"] == 4);
    CHECK(json::to_msgpack(body[1]) == kmes_record("a", 3));  // each record exactly as it came
    // The id names the range, and the same records make the same id.
    CHECK(m.msg_id.rfind("b1:0:1~b1:0:4/3:", 0) == 0);
    RecordingSink again_sink;
    Packer again(PackLimits{3, 1 << 20, 5ms}, again_sink);
    for (uint64_t s : {1, 3, 4}) add(again, kmes_record("a", s), t0);
    REQUIRE(again_sink.messages.size() == 1);
    CHECK(again_sink.messages[0].msg_id == m.msg_id);
    CHECK(again_sink.messages[0].body == m.body);
    // Other records in between (another filter, a resend cut differently): another id.
    RecordingSink other_sink;
    Packer other(PackLimits{3, 1 << 20, 5ms}, other_sink);
    for (uint64_t s : {1, 2, 4}) add(other, kmes_record("a", s), t0);
    CHECK(other_sink.messages.at(0).msg_id != m.msg_id);

    // The delay: "b" is due 5 ms after its first record.
    CHECK(p.next_due() == t0 + 5ms);
    REQUIRE(p.flush_due(t0 + 4ms));
    CHECK(sink.messages.size() == 1);
    REQUIRE(p.flush_due(t0 + 5ms));
    REQUIRE(sink.messages.size() == 2);
    CHECK(sink.messages[1].event_type == "b");
    CHECK(sink.messages[1].msg_id == "b1:0:2");  // one record: its own id
    CHECK(json::from_msgpack(sink.messages[1].body).is_array());
    CHECK(p.next_due() == Packer::Clock::time_point::max());

    // Bytes: a record that would take the message past MaxMessageBytes closes it first; a record
    // bigger than the limit goes alone.
    RecordingSink bytes_sink;
    const size_t one = kmes_record("c", 10).size();
    Packer small(PackLimits{100, static_cast<uint32_t>(5 + 2 * one), 5ms}, bytes_sink);
    for (uint64_t s = 10; s < 15; ++s) add(small, kmes_record("c", s), t0);
    REQUIRE(bytes_sink.messages.size() == 2);
    CHECK(bytes_sink.messages[0].records == 2);
    CHECK(bytes_sink.messages[0].body.size() <= 5 + 2 * one);
    CHECK(bytes_sink.messages[1].records == 2);
    // A new boot closes the type's open message.
    add(small, kmes_record("c", 1, "b2"), t0);
    REQUIRE(bytes_sink.messages.size() == 3);
    CHECK(bytes_sink.messages[2].records == 1);
    CHECK(bytes_sink.messages[2].boot_id == "b1");
    REQUIRE(small.flush_all());
    CHECK(bytes_sink.messages.back().boot_id == "b2");
}

TEST_CASE("forward packing: one record per message keeps the record itself as the body", "[forward]") {
    RecordingSink sink;
    Packer p(PackLimits{1, 1 << 20, std::chrono::milliseconds(5)}, sink);
    const auto record = kmes_record("a", 7);
    add(p, record);
    REQUIRE(sink.messages.size() == 1);
    CHECK(sink.messages[0].body == record);
    CHECK(sink.messages[0].msg_id == "b1:0:7");
    CHECK(sink.messages[0].records == 1);
    p.cursor("c1", 1);
    CHECK(sink.order == std::vector<std::string>{"m:1", "c:c1"});
}

TEST_CASE("forward packing: a frame's cursor reaches the window only after every record before it is published",
          "[forward]") {
    using namespace std::chrono_literals;
    RecordingSink sink;
    const auto t0 = Packer::Clock::now();
    Packer p(PackLimits{2, 1 << 20, 5ms}, sink);
    add(p, kmes_record("a", 1), t0);
    add(p, kmes_record("b", 2), t0);
    p.cursor("c1", 2);  // a and b are open: c1 waits
    add(p, kmes_record("b", 3), t0);  // b full → published; a still open
    p.cursor("c2", 3);
    CHECK(sink.order == std::vector<std::string>{"m:2"});
    add(p, kmes_record("c", 4), t0 + 1ms);
    p.cursor("c3", 4);
    REQUIRE(p.flush_due(t0 + 5ms));  // a is due (c is not): c1 and c2 are ready, c3 waits for c
    CHECK(sink.order == std::vector<std::string>{"m:2", "m:1", "c:c1", "c:c2"});
    REQUIRE(p.flush_all());
    CHECK(sink.order == std::vector<std::string>{"m:2", "m:1", "c:c1", "c:c2", "m:1", "c:c3"});
    // Nothing open: a cursor is a checkpoint at once.
    p.cursor("c4", 5);
    CHECK(sink.order.back() == "c:c4");

    // Through the ack window: the cursor persisted never passes an unpublished record.
    AckWindow w;
    struct WindowSink : PackerSink {
        AckWindow& w;
        explicit WindowSink(AckWindow& w) : w(w) {}
        base::Status publish(const PackedMessage& m) override {
            w.reserve(m.records);
            return {};
        }
        void checkpoint(const PersistPoint& point) override { w.checkpoint(point.cursor, point.newest_event_ns); }
    } window_sink(w);
    Packer q(PackLimits{10, 1 << 20, 5ms}, window_sink);
    add(q, kmes_record("a", 1), t0);
    q.cursor("k1", 1);
    add(q, kmes_record("b", 2), t0);
    q.cursor("k2", 2);
    REQUIRE(q.flush_due(t0 + 5ms));  // both published, a first
    w.acked(1, false);
    REQUIRE(w.persistable());
    CHECK(w.persistable()->cursor == "k1");  // k2 needs b's message too
    w.acked(2, false);
    CHECK(w.persistable()->cursor == "k2");
    const WindowCounters c = w.counters();
    CHECK(c.published == 2);
    CHECK(c.messages == 2);
    CHECK(c.pending == 0);
}
