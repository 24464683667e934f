// kmes-tail's payload decoding (kmes-shim/tools/event_format.cpp): ring payloads from kernel
// emitters are not validated by the shim, so the nesting is bounded by the one msgpack reader
// (msgpack::kPayloadMaxDepth) before nlohmann decodes anything.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "msgpack/reader.hpp"
#include "tools/event_format.hpp"

namespace {

// `depth` nested one-element arrays around a nil.
std::vector<uint8_t> nested_arrays(int depth) {
    std::vector<uint8_t> bytes(static_cast<size_t>(depth), 0x91);  // fixarray of 1
    bytes.push_back(0xc0);                                         // nil
    return bytes;
}

}  // namespace

TEST_CASE("kmes-tail decodes a payload nested as deep as the shim admits", "[event_format]") {
    nlohmann::ordered_json out;
    kmes::tools::add_payload(out, nested_arrays(eventd::msgpack::kPayloadMaxDepth));
    CHECK(out.contains("payload"));
    CHECK_FALSE(out.contains("payload_error"));
}

TEST_CASE("kmes-tail reports a deeper payload instead of decoding it", "[event_format]") {
    for (int depth : {eventd::msgpack::kPayloadMaxDepth + 1, 1'000'000}) {
        nlohmann::ordered_json out;
        kmes::tools::add_payload(out, nested_arrays(depth));
        INFO("depth " << depth);
        CHECK_FALSE(out.contains("payload"));
        REQUIRE(out.contains("payload_error"));
        CHECK(out["payload_error"].get<std::string>().find("deeper than 256") != std::string::npos);
        CHECK(out.contains("payload_hex"));
    }
}

TEST_CASE("kmes-tail still reports malformed payloads in nlohmann's words", "[event_format]") {
    nlohmann::ordered_json out;
    kmes::tools::add_payload(out, std::vector<uint8_t>{0x92, 0x01});  // an array of 2 with 1 element
    CHECK(out.contains("payload_error"));
    CHECK_FALSE(out.contains("payload"));
}
