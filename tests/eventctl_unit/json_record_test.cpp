// The tree-less JSON writer against the tree reference (tree_reference.hpp), byte for byte.
#include <catch2/catch.hpp>

#include "eventctl/json_record.hpp"
#include "eventctl/value_walk.hpp"
#include "tree_reference.hpp"
#include "value_cases.hpp"

namespace eventctl::test {
namespace {

std::string json_of(const Bytes& record) {
    std::string out;
    const auto st = append_json_record(out, record);
    REQUIRE(st.ok());
    return out;
}

}  // namespace

TEST_CASE("JSON of every value kind and width matches the tree reference", "[json]") {
    for (const auto& c : value_cases()) {
        INFO(c.name);
        const Bytes record = record_with("v", c.value);
        CHECK(json_of(record) == reference_json(record));
    }
}

TEST_CASE("JSON of keys that need escaping matches the tree reference", "[json]") {
    for (const auto& key : key_cases()) {
        INFO(key);
        const Bytes record = record_with(key, Bytes{0x01});
        CHECK(json_of(record) == reference_json(record));
    }
}

TEST_CASE("JSON of one record holding every case keeps wire order", "[json]") {
    Bytes record = map_header(static_cast<uint32_t>(value_cases().size()));
    for (const auto& c : value_cases()) record = cat({record, str(c.name), c.value});
    CHECK(json_of(record) == reference_json(record));
}

TEST_CASE("JSON writes the documented forms", "[json]") {
    CHECK(json_of(map_of({{"b", bin_as(0xc4, "\x01\xab")}})) == R"({"b":{"$binary":"01ab"}})");
    CHECK(json_of(map_of({{"e", ext_as(0xd5, -2, std::string_view("\x00\xff", 2))}})) ==
          R"({"e":{"$extension":{"type":-2,"data":"00ff"}}})");
    CHECK(json_of(map_of({{"f", f64(-std::numeric_limits<double>::infinity())}})) == R"({"f":{"$float":"-inf"}})");
    CHECK(json_of(map_of({{"f", f64(7.5)}, {"g", f64(1e20)}, {"h", f64(0.1)}})) == R"({"f":7.5,"g":1e+20,"h":0.1})");
    CHECK(json_of(map_of({{"s", str("a\xff\n")}})) == "{\"s\":\"a\xef\xbf\xbd\\n\"}");
    CHECK(json_of(map_header(0)) == "{}");
}

TEST_CASE("JSON appends to what the string already holds", "[json]") {
    std::string out = ",\n";
    REQUIRE(append_json_record(out, map_of({{"a", Bytes{0x01}}})).ok());
    CHECK(out == ",\n{\"a\":1}");
}

TEST_CASE("JSON writes a nested key that is not a string as the string of its text", "[json]") {
    // {"r": {1: "x", true: 2, [1]: 3}}: msgpack allows any key; JSON keys are strings.
    const Bytes record = {0x81, 0xa1, 'r', 0x83, 0x01, 0xa1, 'x', 0xc3, 0x02, 0x91, 0x01, 0x03};
    CHECK(json_of(record) == R"({"r":{"1":"x","true":2,"[1]":3}})");
}

namespace {

// {"r": {{{…{"\"": 1}…: 1}: 1}: 1}}: `levels` maps, each the key of the one around it.
Bytes keys_in_keys(int levels) {
    Bytes key = cat({Bytes{0x81}, str("\""), Bytes{0x01}});
    for (int i = 1; i < levels; ++i) key = cat({Bytes{0x81}, key, Bytes{0x01}});
    return cat({Bytes{0x81}, str("r"), Bytes{0x81}, key, Bytes{0x01}});
}

}  // namespace

// From fuzz/eventctl_output_fuzz.cpp (fuzz/corpus/eventctl_output/regression-keys-in-keys):
// each level escapes the text inside it again, doubling it, so 100 bytes of keys nested in
// keys wrote gigabytes and hung eventctl.
TEST_CASE("JSON refuses map keys nested in map keys past kMaxKeyNesting instead of doubling per level", "[json]") {
    CHECK(json_of(keys_in_keys(1)) == R"({"r":{"{\"\\\"\":1}":1}})");
    CHECK(json_of(keys_in_keys(kMaxKeyNesting)).size() < 200);
    std::string out;
    CHECK_FALSE(append_json_record(out, keys_in_keys(kMaxKeyNesting + 1)).ok());
    CHECK_FALSE(append_json_record(out, keys_in_keys(200)).ok());
}

TEST_CASE("JSON of malformed bytes is an error, not a crash", "[json]") {
    std::string out;
    CHECK_FALSE(append_json_record(out, Bytes{0x81, 0xa1, 'k'}).ok());           // value missing
    CHECK_FALSE(append_json_record(out, Bytes{0x81, 0xa1, 'k', 0xc1}).ok());     // never-used byte
    CHECK_FALSE(append_json_record(out, Bytes{0x81, 0xa1, 'k', 0xd9, 9}).ok());  // string cut short
    CHECK_FALSE(append_json_record(out, Bytes{0x80, 0x80}).ok());                // trailing bytes
    CHECK_FALSE(append_json_record(out, Bytes{}).ok());
    Bytes too_deep = Bytes{0xc0};
    for (int i = 0; i < 300; ++i) too_deep = cat({Bytes{0x91}, too_deep});
    CHECK_FALSE(append_json_record(out, too_deep).ok());
}

}  // namespace eventctl::test
