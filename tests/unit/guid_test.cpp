// The one GUID text form (kmes/guid.hpp, PSD-008 §8.8 "standard GUID format"): written lowercase
// 8-4-4-4-12 from the bytes in order, read back from any case with or without braces.
#include <catch2/catch.hpp>

#include <cctype>
#include <random>
#include <string>

#include "base/guid_text.hpp"
#include "kmes/guid.hpp"

namespace {

const kmes::Guid kExample = {0x55, 0x0e, 0x84, 0x00, 0xe2, 0x9b, 0x41, 0xd4,
                             0xa7, 0x16, 0x44, 0x66, 0x55, 0x44, 0x00, 0x00};

}  // namespace

TEST_CASE("guid_text writes the bytes in order, lowercase, 8-4-4-4-12", "[guid]") {
    CHECK(base::guid_text(kExample) == "550e8400-e29b-41d4-a716-446655440000");
    CHECK(base::guid_text(kmes::Guid{}) == "00000000-0000-0000-0000-000000000000");
    kmes::Guid all_ff;
    all_ff.fill(0xff);
    CHECK(base::guid_text(all_ff) == "ffffffff-ffff-ffff-ffff-ffffffffffff");
    char out[base::kGuidTextLength + 1] = {};
    out[base::kGuidTextLength] = '!';
    base::write_guid_text(kExample, out);
    CHECK(std::string(out, base::kGuidTextLength) == "550e8400-e29b-41d4-a716-446655440000");
    CHECK(out[base::kGuidTextLength] == '!');  // exactly 36 characters, no terminator
}

TEST_CASE("parse_guid reads the standard form in any case, braces optional", "[guid]") {
    CHECK(base::parse_guid("550e8400-e29b-41d4-a716-446655440000") == kExample);
    CHECK(base::parse_guid("{550E8400-E29B-41D4-A716-446655440000}") == kExample);
    CHECK(base::parse_guid("550E8400-e29b-41D4-a716-446655440000") == kExample);
}

TEST_CASE("parse_guid refuses anything else", "[guid]") {
    for (const char* bad : {"", "550e8400e29b41d4a716446655440000", "{550e8400-e29b-41d4-a716-446655440000",
                            "550e8400-e29b-41d4-a716-446655440000}", "550e8400-e29b-41d4-a716-44665544000g",
                            "550e8400-e29b-41d4-a716_446655440000", "x550e8400-e29b-41d4-a716-446655440000",
                            "550e8400-e29b-41d4-a716-4466554400000", "550e840-0e29b-41d4-a716-446655440000",
                            "(550e8400-e29b-41d4-a716-446655440000)"}) {
        INFO(bad);
        CHECK_FALSE(base::parse_guid(bad));
    }
}

TEST_CASE("every GUID survives the round trip through its text", "[guid]") {
    std::mt19937_64 rng(20261125);
    for (int i = 0; i < 10000; ++i) {
        kmes::Guid g;
        for (auto& b : g) b = static_cast<uint8_t>(rng());
        const std::string text = base::guid_text(g);
        REQUIRE(text.size() == base::kGuidTextLength);
        CHECK(base::parse_guid(text) == g);
        CHECK(base::parse_guid("{" + text + "}") == g);
        std::string upper = text;
        for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        CHECK(base::parse_guid(upper) == g);
        CHECK(base::guid_text(*base::parse_guid(upper)) == text);
    }
}
