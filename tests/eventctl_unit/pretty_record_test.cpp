// The tree-less pretty writer against the tree reference (tree_reference.hpp), byte for byte,
// and the string and key rules on their own.
#include <cstdlib>
#include <ctime>

#include <catch2/catch.hpp>

#include "eventctl/pretty_format.hpp"
#include "eventctl/time_text.hpp"
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
          R"(timestamp=2025-11-22T16:55:22.678123456Z cpu_id=1 event_type="kacs.access_check" user="alice\nbob" ok=true)");
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

TEST_CASE("pretty writes event times as RFC 3339: UTC by default, the local zone on request", "[pretty]") {
    const Bytes gap = map_of({{"timestamp", tagged(0xcf, 1795493460061943023ull, 8)},
                              {"event_type", str("synthetic.gap")},
                              {"last_seen_timestamp", tagged(0xcf, 1795493460000000000ull, 8)},
                              {"revealing_timestamp", Bytes{0x05}},
                              {"count", Bytes{0x0c}}});
    CHECK(pretty_of(gap) ==
          R"(timestamp=2026-11-24T04:11:00.061943023Z event_type="synthetic.gap" )"
          R"(last_seen_timestamp=2026-11-24T04:11:00.000000000Z revealing_timestamp=1970-01-01T00:00:00.000000005Z count=12)");
    // Other values under a time key, and time-like keys elsewhere, are written as they are.
    CHECK(pretty_of(map_of({{"timestamp", str("soon")}, {"my_timestamps", Bytes{0x01}}, {"_timestamp", Bytes{0x02}}})) ==
          R"(timestamp="soon" my_timestamps=1 _timestamp=2)");
    CHECK(pretty_of(map_of({{"timestamp", tagged(0xcf, 0xffffffffffffffffull, 8)}})) == "timestamp=18446744073709551615");
    CHECK(pretty_of(map_of({{"m", map_of({{"timestamp", Bytes{0x01}}})}})) == R"(m={"timestamp":1})");

    const char* old_tz = std::getenv("TZ");
    const std::string saved = old_tz ? old_tz : "";
    ::setenv("TZ", "Asia/Kolkata", 1);  // +05:30, no daylight saving time
    ::tzset();
    std::string local;
    REQUIRE(append_pretty_record(local, map_of({{"timestamp", tagged(0xcf, 1795493460061943023ull, 8)}}),
                                 TimeZone::local));
    if (old_tz) ::setenv("TZ", saved.c_str(), 1); else ::unsetenv("TZ");
    ::tzset();
    CHECK(local == "timestamp=2026-11-24T09:41:00.061943023+05:30");
}

TEST_CASE("rfc3339: fractions, times before 1970, status precision", "[pretty]") {
    CHECK(rfc3339(0, TimeZone::utc) == "1970-01-01T00:00:00.000000000Z");
    CHECK(rfc3339(-1, TimeZone::utc) == "1969-12-31T23:59:59.999999999Z");
    CHECK(rfc3339(1795493460061943023, TimeZone::utc, 3) == "2026-11-24T04:11:00.061Z");
    CHECK(rfc3339(1795493460061943023, TimeZone::utc, 0) == "2026-11-24T04:11:00Z");
}

}  // namespace eventctl::test
