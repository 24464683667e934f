// The tree-less pretty writer against the tree reference (tree_reference.hpp), byte for byte,
// and the string and key rules on their own.
#include <catch2/catch.hpp>

#include "eventctl/pretty_format.hpp"
#include "tree_reference.hpp"
#include "value_cases.hpp"

namespace eventctl::test {
namespace {

std::string pretty_of(const Bytes& record) {
    std::string out;
    const auto st = append_pretty_record(out, record);
    REQUIRE(st.ok());
    return out;
}

}  // namespace

TEST_CASE("pretty of every value kind and width matches the tree reference", "[pretty]") {
    for (const auto& c : value_cases()) {
        INFO(c.name);
        const Bytes record = record_with("v", c.value);
        CHECK(pretty_of(record) == reference_pretty(record));
    }
}

TEST_CASE("pretty keys match the tree reference", "[pretty]") {
    for (const auto& key : key_cases()) {
        INFO(key);
        const Bytes record = record_with(key, Bytes{0x01});
        CHECK(pretty_of(record) == reference_pretty(record));
    }
}

TEST_CASE("pretty of one record holding every case matches the tree reference", "[pretty]") {
    Bytes record = map_header(static_cast<uint32_t>(value_cases().size()));
    for (const auto& c : value_cases()) record = cat({record, str(c.name), c.value});
    CHECK(pretty_of(record) == reference_pretty(record));
}

TEST_CASE("pretty writes the documented forms", "[pretty]") {
    CHECK(pretty_of(map_of({{"timestamp", tagged(0xcf, 1763830522678123456ull, 8)},
                            {"cpu_id", Bytes{0x01}},
                            {"event_type", str("kacs.access_check")},
                            {"user", str("alice\nbob")},
                            {"ok", Bytes{0xc3}}})) ==
          R"(timestamp=1763830522678123456 cpu_id=1 event_type="kacs.access_check" user="alice\nbob" ok=true)");
    CHECK(pretty_of(map_of({{"b", bin_as(0xc4, "\x01\xab")}, {"e", ext_as(0xd4, -3, "\xff")}})) ==
          "b=bin:01ab e=ext(-3):ff");
    CHECK(pretty_of(map_of({{"n", f64(std::nan(""))}, {"i", f32(-std::numeric_limits<float>::infinity())}})) ==
          "n=nan i=-inf");
    CHECK(pretty_of(map_of({{"m", map_of({{"k", Bytes{0x01}}, {"l", array_of({Bytes{0x01}, str("x")})}})}})) ==
          R"(m={"k":1,"l":[1,"x"]})");
    CHECK(pretty_of(map_header(0)).empty());
}

TEST_CASE("pretty strings escape controls, quotes and bytes that are not UTF-8", "[pretty]") {
    CHECK(pretty_string("plain") == R"("plain")");
    CHECK(pretty_string("q\"b\\") == R"("q\"b\\")");
    CHECK(pretty_string("\n\r\t") == R"("\n\r\t")");
    CHECK(pretty_string(std::string("\x01\x00\x7f", 3)) == R"("\u0001\u0000\u007f")");
    CHECK(pretty_string("caf\xc3\xa9") == "\"caf\xc3\xa9\"");
    CHECK(pretty_string("\xc2\x85") == R"("\u0085")");
    CHECK(pretty_string("a\xff"
                        "b\xe2\x82") == R"("a\xffb\xe2\x82")");
}

TEST_CASE("pretty keys are bare unless they need quotes", "[pretty]") {
    CHECK(pretty_key("cpu_id") == "cpu_id");
    CHECK(pretty_key("caf\xc3\xa9") == "caf\xc3\xa9");
    CHECK(pretty_key("") == R"("")");
    CHECK(pretty_key("a b") == R"("a b")");
    CHECK(pretty_key("a=b") == R"("a=b")");
    CHECK(pretty_key("bad\xff") == R"("bad\xff")");
}

TEST_CASE("pretty of one value (status cells)", "[pretty]") {
    std::string out;
    REQUIRE(append_pretty_value(out, f64(0.5)).ok());
    CHECK(out == "0.5");
    CHECK_FALSE(append_pretty_value(out, Bytes{0x01, 0x02}).ok());  // two values
}

TEST_CASE("pretty of malformed bytes is an error, not a crash", "[pretty]") {
    std::string out;
    CHECK_FALSE(append_pretty_record(out, Bytes{0x81, 0xa1, 'k'}).ok());
    CHECK_FALSE(append_pretty_record(out, Bytes{0x81, 0xa1, 'k', 0xc1}).ok());
    CHECK_FALSE(append_pretty_record(out, Bytes{0x81, 0x01, 0x02}).ok());
    CHECK_FALSE(append_pretty_record(out, Bytes{0x91, 0x01}).ok());  // not a map
    CHECK_FALSE(append_pretty_record(out, Bytes{0x80, 0x80}).ok());
    Bytes too_deep = Bytes{0xc0};
    for (int i = 0; i < 300; ++i) too_deep = cat({Bytes{0x91}, too_deep});
    CHECK_FALSE(append_pretty_record(out, record_with("v", too_deep)).ok());
}

}  // namespace eventctl::test
