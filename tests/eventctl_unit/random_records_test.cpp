// Seeded random records — every kind, width and awkward byte mixed and nested — through both
// writers and the tree reference. The seed is fixed so that a failure reproduces.
#include <catch2/catch.hpp>

#include <cstring>
#include <random>

#include "eventctl/display_width.hpp"
#include "eventctl/json_record.hpp"
#include "eventctl/pretty_format.hpp"
#include "eventctl/pretty_wrap.hpp"
#include "tree_reference.hpp"
#include "wrapped_lines.hpp"

namespace eventctl::test {
namespace {

class Generator {
public:
    explicit Generator(uint64_t seed) : rng_(seed) {}

    Bytes record() {
        const uint32_t n = below(12);
        Bytes out = map_header(n);
        for (uint32_t i = 0; i < n; ++i) out = cat({out, key(i), value(0)});
        return out;
    }

private:
    uint32_t below(uint32_t n) { return static_cast<uint32_t>(rng_() % n); }
    uint64_t bits() { return rng_(); }

    // Distinct within a map (eventd never sends duplicate keys; the tree would merge them).
    Bytes key(uint32_t index) { return str(text() + "#" + std::to_string(index)); }

    std::string text() {
        static const char* const kPieces[] = {"a",
                                              "Z",
                                              " ",
                                              "\"",
                                              "\\",
                                              "\n",
                                              "\t",
                                              "\x01",
                                              "\x7f",
                                              "=",
                                              "\xc3\xa9",
                                              "\xe2\x82\xac",
                                              "\xf0\x9f\x98\x80",
                                              "\xc2\x85",
                                              "\xff",
                                              "\x80",
                                              "\xed\xa0\x80",
                                              "\xe2\x82"};
        std::string s;
        const uint32_t n = below(4) == 0 ? below(250) : below(12);
        const bool plain = below(3) == 0;  // the fast path: printable ASCII only
        for (uint32_t i = 0; i < n; ++i) {
            if (plain) {
                s += static_cast<char>(0x20 + below(95));
            } else if (below(3) == 0) {
                s += kPieces[below(std::size(kPieces))];
            } else {
                s += static_cast<char>(below(256));
            }
        }
        if (s.size() > 255) s.resize(255);  // fits the str8/bin8/ext8 forms too
        return s;
    }

    double any_double() {
        switch (below(4)) {
            case 0: {
                const uint64_t u = bits();  // any bit pattern: NaN payloads, subnormals, huge
                double d;
                std::memcpy(&d, &u, sizeof d);
                return d;
            }
            case 1:
                return static_cast<double>(static_cast<int64_t>(bits() % 2000001) - 1000000) / 8;
            case 2:
                return static_cast<double>(bits() % 1000) / 10;
            default:
                return std::ldexp(static_cast<double>(bits() % 1000), static_cast<int>(below(200)) - 100);
        }
    }

    Bytes value(int depth) {
        const uint32_t kinds = depth < 5 ? 16 : 14;  // no containers below five levels
        switch (below(kinds)) {
            case 0:
                return {static_cast<uint8_t>(below(3) == 0 ? 0xc0 : 0xc2 + below(2))};
            case 1:
                return {static_cast<uint8_t>(below(256) < 128 ? below(128) : 0xe0 + below(32))};  // fixint
            case 2: {
                const int width = 1 << below(4);
                return tagged(static_cast<uint8_t>(0xcc + (width == 1   ? 0
                                                           : width == 2 ? 1
                                                           : width == 4 ? 2
                                                                        : 3)),
                              bits(), width);
            }
            case 3: {
                const int width = 1 << below(4);
                return tagged(static_cast<uint8_t>(0xd0 + (width == 1   ? 0
                                                           : width == 2 ? 1
                                                           : width == 4 ? 2
                                                                        : 3)),
                              bits(), width);
            }
            case 4:
                return f64(any_double());
            case 5: {
                const uint32_t u = static_cast<uint32_t>(bits());
                float f;
                std::memcpy(&f, &u, sizeof f);
                return below(2) == 0 ? f32(f) : f32(static_cast<float>(any_double()));
            }
            case 6:
            case 7:
            case 8:
                return str(text());
            case 9:
                return str_as(static_cast<uint8_t>(0xd9 + below(3)), text());
            case 10:
                return bin_as(static_cast<uint8_t>(0xc4 + below(3)), text());
            case 11: {
                static const uint8_t kFix[] = {0xd4, 0xd5, 0xd6, 0xd7, 0xd8};
                static const std::size_t kSize[] = {1, 2, 4, 8, 16};
                const uint32_t i = below(5);
                std::string data = text();
                data.resize(kSize[i], 'q');
                return ext_as(kFix[i], static_cast<int8_t>(below(256)), data);
            }
            case 12:
                return ext_as(static_cast<uint8_t>(0xc7 + below(3)), static_cast<int8_t>(below(256)), text());
            case 13:
                return {0xc0};
            case 14: {
                const uint32_t n = below(6);
                Bytes out = map_header(n);
                for (uint32_t i = 0; i < n; ++i) out = cat({out, key(i), value(depth + 1)});
                return out;
            }
            default: {
                const uint32_t n = below(6);
                Bytes out = array_header(n);
                for (uint32_t i = 0; i < n; ++i) out = cat({out, value(depth + 1)});
                return out;
            }
        }
    }

    std::mt19937_64 rng_;
};

}  // namespace

TEST_CASE("random records: both writers match the tree reference", "[random]") {
    Generator gen(20251122);
    std::string json, pretty;
    for (int i = 0; i < 5000; ++i) {
        const Bytes record = gen.record();
        json.clear();
        pretty.clear();
        const auto json_status = append_json_record(json, record);
        const auto pretty_status = append_pretty_record(pretty, record);
        INFO("record " << i << ": " << (json_status.ok() ? "" : json_status.error().message)
                       << (pretty_status.ok() ? "" : pretty_status.error().message));
        REQUIRE(json_status.ok());
        REQUIRE(pretty_status.ok());
        REQUIRE(json == reference_json(record));
        REQUIRE(pretty == reference_pretty(record));
    }
}

TEST_CASE("random records wrapped: no line wider than the width, and the layout removed gives the line", "[random]") {
    Generator gen(20261126);
    std::string pretty, out;
    for (int i = 0; i < 5000; ++i) {
        const Bytes record = gen.record();
        pretty.clear();
        REQUIRE(append_pretty_record(pretty, record).ok());
        const std::size_t width = kMinWidth + static_cast<std::size_t>(i % 100);
        out.clear();
        append_wrapped(out, pretty, width);
        INFO("record " << i << " at width " << width << ":\n" << out);
        for (const std::string& line : lines_of(out)) REQUIRE(display_columns(line) <= width);
        REQUIRE(unwrapped(out) == pretty);
    }
}

}  // namespace eventctl::test
