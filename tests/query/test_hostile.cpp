// [hostile]: what a raw socket client can throw at the query server (PSD-008 §8.8): an
// oversized length (rejected with "exceeds N" without reading the body), a truncated frame,
// bytes that are not msgpack, a body that is not a map, a missing or non-string `query`, a
// second query on one connection, and a client that connects and sends nothing. eventd keeps
// serving everyone else throughout.
#include <sys/socket.h>

#include <chrono>
#include <thread>

#include <catch2/catch.hpp>

#include "query_env.hpp"
#include "wire_client.hpp"

namespace eventd::query_it {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

// A well-behaved query on a fresh connection still works.
void check_still_serving(QueryEnv& env) {
    WireClient client(env.socket());
    REQUIRE(client.send_query("EVENTS app.login COUNT"));
    const auto frames = client.read_reply(seconds(10));
    INFO("frames: " << json(frames).dump());
    REQUIRE(frames.size() == 2);
    CHECK(frames[0] == json({{"status", "ok"}, {"records", {{{"count", 10}}}}}));
    CHECK(frames[1] == json({{"status", "end"}}));
}

// The reply to a bad request: one error frame, then the connection closes. Returns the text.
std::string expect_error_then_close(WireClient& client) {
    auto frame = client.read_frame(seconds(5));
    INFO("eventd sent no frame (closed: " << client.closed() << ")");
    REQUIRE(frame);
    INFO("frame: " << frame->dump());
    REQUIRE(frame->value("status", "") == "error");
    REQUIRE((*frame)["error"].is_string());
    CHECK(client.wait_closed(seconds(5)));
    return (*frame)["error"].get<std::string>();
}

EnvOptions hostile_options() {
    return EnvOptions{.eventd = {{"MaxQueryMessageBytes", 1024}, {"QueryTimeoutMs", 1000}}};
}

TEST_CASE("a length above MaxQueryMessageBytes is rejected at once, without reading the body", "[hostile]") {
    QueryEnv env(hostile_options());
    {
        WireClient client(env.socket());
        // Only the length: a server that waited for the body would time out instead of answering.
        REQUIRE(client.send_bytes(WireClient::length_prefix(1025)));
        const auto start = std::chrono::steady_clock::now();
        const std::string error = expect_error_then_close(client);
        CHECK(error.find("exceeds 1024") != std::string::npos);
        CHECK(std::chrono::steady_clock::now() - start < milliseconds(900));  // before the idle timeout
    }
    {
        WireClient client(env.socket());
        REQUIRE(client.send_bytes(WireClient::length_prefix(0xFFFFFFFFu)));
        CHECK(expect_error_then_close(client).find("exceeds 1024") != std::string::npos);
    }
    check_still_serving(env);
}

TEST_CASE("a frame of exactly MaxQueryMessageBytes is accepted", "[hostile]") {
    QueryEnv env(hostile_options());
    // {"query": "EVENTS app.login COUNT" + spaces} padded to a 1024-byte body.
    std::string text = "EVENTS app.login COUNT";
    auto body = json::to_msgpack(json{{"query", text}});
    text.append(1024 - body.size() - 2, ' ');  // str8 → str16 header grows by 1..2 bytes
    body = json::to_msgpack(json{{"query", text}});
    while (body.size() < 1024) {
        text.push_back(' ');
        body = json::to_msgpack(json{{"query", text}});
    }
    while (body.size() > 1024) {
        text.pop_back();
        body = json::to_msgpack(json{{"query", text}});
    }
    REQUIRE(body.size() == 1024);
    WireClient client(env.socket());
    REQUIRE(client.send_bytes(WireClient::frame(body)));
    const auto frames = client.read_reply(seconds(10));
    INFO(json(frames).dump());
    REQUIRE(frames.size() == 2);
    CHECK(frames[0]["records"] == json::array({{{"count", 10}}}));
}

TEST_CASE("a truncated frame is dropped and eventd keeps serving", "[hostile]") {
    QueryEnv env(hostile_options());
    {
        WireClient client(env.socket());
        auto frame = WireClient::frame(json::to_msgpack(json{{"query", "EVENTS app.login COUNT"}}));
        frame.resize(frame.size() - 5);
        REQUIRE(client.send_bytes(frame));
        shutdown(client.fd(), SHUT_WR);  // the rest never comes
        // eventd answers with an error frame or just closes; it must not run the query.
        const auto frames = client.read_reply(seconds(5));
        INFO(json(frames).dump());
        CHECK(records_of(frames).empty());
        CHECK(client.wait_closed(seconds(5)));
    }
    {
        // Half a length prefix, then silence: closed by the idle timeout (QueryTimeoutMs 1000).
        WireClient client(env.socket());
        REQUIRE(client.send_bytes({0x10, 0x00}));
        CHECK(client.wait_closed(seconds(5)));
    }
    check_still_serving(env);
}

TEST_CASE("bodies that are not a query map get an error frame", "[hostile]") {
    QueryEnv env(hostile_options());
    const std::vector<std::pair<const char*, std::vector<uint8_t>>> bodies = {
        {"garbage (0xc1 is never used in msgpack)", {0xc1, 0xc1, 0xc1}},
        {"random bytes", {0xde, 0xad, 0xbe, 0xef, 0x00, 0x01}},
        {"an array", json::to_msgpack(json::array({"query", "EVENTS COUNT"}))},
        {"a string", json::to_msgpack(json("EVENTS COUNT"))},
        {"a map without query", json::to_msgpack(json{{"q", "EVENTS COUNT"}})},
        {"a non-string query", json::to_msgpack(json{{"query", 42}})},
        {"a nil query", json::to_msgpack(json{{"query", nullptr}})},
        {"an empty body", {}},
        {"a map followed by trailing bytes",
         [] {
             auto b = json::to_msgpack(json{{"query", "EVENTS COUNT"}});
             b.push_back(0xc0);
             return b;
         }()},
    };
    for (const auto& [what, body] : bodies) {
        INFO(what);
        WireClient client(env.socket());
        REQUIRE(client.send_bytes(WireClient::frame(body)));
        const std::string error = expect_error_then_close(client);
        CHECK(!error.empty());
        CHECK(error.find("SELECT") == std::string::npos);
    }
    check_still_serving(env);
}

TEST_CASE("one query per connection: a second query is not answered", "[hostile]") {
    QueryEnv env(hostile_options());
    WireClient client(env.socket());
    REQUIRE(client.send_query("EVENTS app.login COUNT"));
    client.send_query("EVENTS kacs.* COUNT");  // may fail if eventd already closed
    const auto frames = client.read_reply(seconds(10));
    INFO(json(frames).dump());
    REQUIRE(frames.size() == 2);
    CHECK(frames[0]["records"] == json::array({{{"count", 10}}}));
    CHECK(frames[1] == json({{"status", "end"}}));
    // After `end` the connection closes; an error frame about the extra query is acceptable,
    // a second result is not.
    const auto rest = client.read_reply(seconds(5));
    INFO(json(rest).dump());
    CHECK(records_of(rest).empty());
    CHECK(client.wait_closed(seconds(5)));
}

TEST_CASE("a client that connects and sends nothing is closed after QueryTimeoutMs; others are served meanwhile",
          "[hostile]") {
    QueryEnv env(hostile_options());
    WireClient idle(env.socket());
    const auto start = std::chrono::steady_clock::now();
    check_still_serving(env);
    check_still_serving(env);
    CHECK(idle.wait_closed(seconds(6)));
    const auto waited = std::chrono::steady_clock::now() - start;
    CHECK(waited >= milliseconds(900));
    CHECK(waited < seconds(6));
    check_still_serving(env);
}

}  // namespace
}  // namespace eventd::query_it
