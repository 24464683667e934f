// decode_request (eventd/server/frame.hpp, PSD-008 §8.8): the query text of a request body, and
// each documented error for the bodies that have none (docs/QUERY-SERVER.md "Request errors").
#include <catch2/catch.hpp>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "eventd/server/record_batcher.hpp"
#include "protocol/wire.hpp"
#include "query_util.hpp"

namespace {

using eventd_unit::packed;

using protocol::decode_request;
using protocol::kRequestMaxDepth;
using nlohmann::json;
using Bytes = std::vector<uint8_t>;


// {query: "q", x: [[…nil…]]} nesting `depth` deep in all: the request map is level 1.
Bytes nested_request(int depth) {
    Bytes b = {0x82, 0xa5, 'q', 'u', 'e', 'r', 'y', 0xa1, 'q', 0xa1, 'x'};
    b.insert(b.end(), static_cast<size_t>(depth - 1), 0x91);
    b.push_back(0xc0);
    return b;
}

std::string decode_error_of(const Bytes& body) {
    auto r = decode_request(body);
    REQUIRE_FALSE(r.ok());
    return r.error().message;
}

}  // namespace

TEST_CASE("a request's query text is the string under 'query'", "[frame]") {
    CHECK(decode_request(packed(json{{"query", "EVENTS"}})).value().query == "EVENTS");
    CHECK(decode_request(packed(json{{"other", {1, {{"k", "v"}}}}, {"query", "EVENTS"}})).value().query == "EVENTS");
    // The last "query" key counts.
    const Bytes twice = {0x82, 0xa5, 'q', 'u', 'e', 'r', 'y', 0xa1, 'a', 0xa5, 'q', 'u', 'e', 'r', 'y', 0xa1, 'b'};
    CHECK(decode_request(twice).value().query == "b");
}

TEST_CASE("a request nested exactly kRequestMaxDepth deep is read; one level more is refused", "[frame]") {
    REQUIRE(kRequestMaxDepth == 32);  // the number is in the documented error text
    CHECK(decode_request(nested_request(kRequestMaxDepth)).value().query == "q");
    CHECK(decode_error_of(nested_request(kRequestMaxDepth + 1)) == "request nests deeper than 32 levels");
    // Not a map at all, but too deep: the depth is what is wrong first.
    Bytes deep_array(kRequestMaxDepth + 1, 0x91);
    deep_array.push_back(0xc0);
    CHECK(decode_error_of(deep_array) == "request nests deeper than 32 levels");
    // A hostile request as deep as a 64 KiB frame allows: refused, no crash.
    Bytes hostile(65536, 0x91);
    CHECK(decode_error_of(hostile) == "request nests deeper than 32 levels");
}

TEST_CASE("a request may carry a cursor to resume after and allow_gap", "[frame]") {
    auto plain = decode_request(packed(json{{"query", "EVENTS STREAM"}}));
    REQUIRE(plain);
    CHECK_FALSE(plain->after);
    CHECK_FALSE(plain->allow_gap);
    auto resumed = decode_request(packed(json{{"query", "EVENTS STREAM"}, {"after", "1.abc"}, {"allow_gap", true}}));
    REQUIRE(resumed);
    CHECK(resumed->after == std::optional<std::string>("1.abc"));
    CHECK(resumed->allow_gap);
    // "" is a cursor too: from the oldest record.
    CHECK(decode_request(packed(json{{"query", "EVENTS STREAM"}, {"after", ""}})).value().after == std::string());
    CHECK(decode_error_of(packed(json{{"query", "EVENTS"}, {"after", 1}})) ==
          "request key 'after' must be a cursor string");
    CHECK(decode_error_of(packed(json{{"query", "EVENTS"}, {"after", nullptr}})) ==
          "request key 'after' must be a cursor string");
    CHECK(decode_error_of(packed(json{{"query", "EVENTS"}, {"allow_gap", "yes"}})) ==
          "request key 'allow_gap' must be true or false");
    CHECK(decode_error_of(packed(json{{"query", "EVENTS"}, {"allow_gap", json::array({true})}})) ==
          "request key 'allow_gap' must be true or false");
}

TEST_CASE("a tracking batcher puts the position after each frame's last record into the frame", "[frame]") {
    eventd::store::StorePosition start;
    start.store[0] = 7;
    const eventd::store::FileId a{1}, b{2};
    start.last_id[a] = 10;
    const auto key = eventd::store::CursorKey::random();
    eventd::server::RecordBatcher batcher(40, &key);
    batcher.track_position(start);
    const Bytes record = packed(json{{"k", std::string(20, 'x')}});  // 25 bytes: one per 40-byte frame
    batcher.add_encoded(record, eventd::server::RecordBatcher::Stored{a, 11});
    batcher.add_encoded(record, eventd::server::RecordBatcher::Stored{b, 3});  // cut before this one
    batcher.flush();
    auto cursor_of = [&key, &start](const std::vector<uint8_t>& frame) {
        const json body = json::from_msgpack(frame.begin() + protocol::kFrameHeaderBytes, frame.end());
        REQUIRE(body.at("status") == "ok");
        REQUIRE(body.at("records").size() == 1);
        return key.open(body.at("cursor").get<std::string>(), start.store).value();
    };
    REQUIRE(batcher.has_frame());
    auto first = cursor_of(batcher.next_frame());
    CHECK(first.store == start.store);
    CHECK(first.last_id == std::map<eventd::store::FileId, int64_t>{{a, 11}});
    REQUIRE(batcher.has_frame());
    CHECK(cursor_of(batcher.next_frame()).last_id == std::map<eventd::store::FileId, int64_t>{{a, 11}, {b, 3}});
    CHECK_FALSE(batcher.has_frame());
    // Rows examined without a record: only a checkpoint frame (no records) says so.
    batcher.advance(eventd::server::RecordBatcher::Stored{b, 9});
    batcher.flush();
    CHECK_FALSE(batcher.has_frame());
    batcher.flush_position();
    REQUIRE(batcher.has_frame());
    const std::vector<uint8_t> checkpoint = batcher.next_frame();
    const json body = json::from_msgpack(checkpoint.begin() + protocol::kFrameHeaderBytes, checkpoint.end());
    CHECK(body.at("records").empty());
    CHECK(key.open(body.at("cursor").get<std::string>(), start.store).value().last_id.at(b) == 9);
}

TEST_CASE("request errors", "[frame]") {
    const std::string invalid = "request is not valid msgpack";
    const std::string shape = "request must be a map with a string 'query'";
    CHECK(decode_error_of({}) == invalid);
    CHECK(decode_error_of({0xc1}) == invalid);
    CHECK(decode_error_of({0x81, 0xa5, 'q', 'u', 'e', 'r', 'y', 0xa3, 'a'}) == invalid);  // truncated string
    Bytes trailing = packed(json{{"query", "EVENTS"}});
    trailing.push_back(0xc0);
    CHECK(decode_error_of(trailing) == invalid);
    CHECK(decode_error_of({0x82, 0xa5, 'q', 'u', 'e', 'r', 'y', 0xa1, 'q', 0x01, 0x02}) == invalid);  // an integer key
    CHECK(decode_error_of(packed(json::array({"query", "EVENTS"}))) == shape);
    CHECK(decode_error_of(packed(json{{"q", "EVENTS"}})) == shape);
    CHECK(decode_error_of(packed(json{{"query", 7}})) == shape);
    // A later non-string "query" undoes an earlier string one.
    CHECK(decode_error_of({0x82, 0xa5, 'q', 'u', 'e', 'r', 'y', 0xa1, 'a', 0xa5, 'q', 'u', 'e', 'r', 'y', 0x07}) == shape);
}
