// Emission input checks (PSD-003 §4.1.2 steps 7–8): valid_msgpack and valid_utf8.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "shimd/validation.hpp"

using kmes::shim::valid_msgpack;
using kmes::shim::valid_utf8;
using Bytes = std::vector<uint8_t>;

namespace {

constexpr uint32_t kDepth = 32;  // MaxNestingDepth default

bool valid(const Bytes& b, uint32_t depth = kDepth) { return valid_msgpack(b, depth); }

Bytes repeat(uint8_t byte, size_t n) { return Bytes(n, byte); }

Bytes concat(Bytes a, const Bytes& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

// One well-formed value of every msgpack type family (spec.md of msgpack, all formats).
std::vector<std::pair<std::string, Bytes>> every_family() {
    return {
        {"positive fixint", {0x00}},
        {"positive fixint max", {0x7f}},
        {"negative fixint", {0xe0}},
        {"negative fixint -1", {0xff}},
        {"nil", {0xc0}},
        {"false", {0xc2}},
        {"true", {0xc3}},
        {"uint8", {0xcc, 0xff}},
        {"uint16", {0xcd, 0x01, 0x02}},
        {"uint32", {0xce, 1, 2, 3, 4}},
        {"uint64", {0xcf, 1, 2, 3, 4, 5, 6, 7, 8}},
        {"int8", {0xd0, 0x80}},
        {"int16", {0xd1, 0x80, 0x00}},
        {"int32", {0xd2, 0x80, 0, 0, 0}},
        {"int64", {0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0}},
        {"float32", {0xca, 0x3f, 0x80, 0, 0}},
        {"float64", {0xcb, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0}},
        {"fixstr empty", {0xa0}},
        {"fixstr", {0xa3, 'a', 'b', 'c'}},
        {"fixstr 31", concat({0xbf}, repeat('x', 31))},
        {"str8", {0xd9, 0x02, 'h', 'i'}},
        {"str16", concat({0xda, 0x01, 0x00}, repeat('s', 256))},
        {"str32", {0xdb, 0, 0, 0, 1, 'z'}},
        {"bin8", {0xc4, 0x03, 1, 2, 3}},
        {"bin16", {0xc5, 0x00, 0x01, 0xff}},
        {"bin32", {0xc6, 0, 0, 0, 2, 0xaa, 0xbb}},
        {"fixarray empty", {0x90}},
        {"fixarray", {0x93, 0x01, 0xc0, 0xa1, 'x'}},
        {"array16", {0xdc, 0x00, 0x02, 0x01, 0x02}},
        {"array32", {0xdd, 0, 0, 0, 1, 0xc3}},
        {"fixmap empty", {0x80}},
        {"fixmap", {0x82, 0xa1, 'a', 0x01, 0xa1, 'b', 0x92, 0x01, 0x02}},
        {"map16", {0xde, 0x00, 0x01, 0x01, 0x02}},
        {"map32", {0xdf, 0, 0, 0, 1, 0xa1, 'k', 0xc0}},
        {"fixext1", {0xd4, 0x01, 0xaa}},
        {"fixext2", {0xd5, 0x01, 0xaa, 0xbb}},
        {"fixext4", {0xd6, 0xff, 1, 2, 3, 4}},  // timestamp 32
        {"fixext8", concat({0xd7, 0x01}, repeat(0, 8))},
        {"fixext16", concat({0xd8, 0x01}, repeat(0, 16))},
        {"ext8", {0xc7, 0x02, 0x05, 0xaa, 0xbb}},
        {"ext8 empty", {0xc7, 0x00, 0x05}},
        {"ext16", {0xc8, 0x00, 0x01, 0x05, 0xaa}},
        {"ext32", {0xc9, 0, 0, 0, 1, 0x05, 0xaa}},
    };
}

// n nested one-element arrays around nil: depth n.
Bytes nested_arrays(size_t n) { return concat(repeat(0x91, n), {0xc0}); }
// n nested one-entry maps {0: {0: … nil}}: depth n.
Bytes nested_maps(size_t n) {
    Bytes b;
    for (size_t i = 0; i < n; ++i) b.insert(b.end(), {0x81, 0x00});
    b.push_back(0xc0);
    return b;
}

}  // namespace

TEST_CASE("valid_msgpack accepts one value of every type family", "[validation]") {
    for (const auto& [name, bytes] : every_family()) {
        INFO(name);
        CHECK(valid(bytes));
    }
}

TEST_CASE("valid_msgpack rejects every value cut short", "[validation]") {
    for (const auto& [name, bytes] : every_family()) {
        for (size_t cut = 0; cut < bytes.size(); ++cut) {
            INFO(name << " truncated to " << cut << " bytes");
            CHECK_FALSE(valid(Bytes(bytes.begin(), bytes.begin() + cut)));
        }
    }
}

TEST_CASE("valid_msgpack rejects trailing bytes after the value", "[validation]") {
    for (const auto& [name, bytes] : every_family()) {
        INFO(name);
        CHECK_FALSE(valid(concat(bytes, {0xc0})));
    }
    CHECK_FALSE(valid({0x01, 0x02}));  // two values are not one
}

TEST_CASE("valid_msgpack rejects the never-used tag 0xc1", "[validation]") {
    CHECK_FALSE(valid({0xc1}));
    CHECK_FALSE(valid({0x91, 0xc1}));
    CHECK_FALSE(valid({0x81, 0xc1, 0x01}));
}

TEST_CASE("valid_msgpack rejects the empty input", "[validation]") { CHECK_FALSE(valid({})); }

TEST_CASE("valid_msgpack accepts nesting of exactly MaxNestingDepth and rejects one more", "[validation]") {
    const uint32_t depth = GENERATE(4u, 32u, 256u);
    INFO("MaxNestingDepth " << depth);
    CHECK(valid(nested_arrays(depth), depth));
    CHECK_FALSE(valid(nested_arrays(depth + 1), depth));
    CHECK(valid(nested_maps(depth), depth));
    CHECK_FALSE(valid(nested_maps(depth + 1), depth));
    // An empty container still counts as a level.
    CHECK(valid(concat(repeat(0x91, depth - 1), {0x90}), depth));
    CHECK_FALSE(valid(concat(repeat(0x91, depth), {0x90}), depth));
    // Depth is the nesting, not the number of containers: siblings do not add up.
    Bytes wide = {0x92};
    wide = concat(wide, concat(repeat(0x91, depth - 1), {0xc0}));
    wide = concat(wide, concat(repeat(0x91, depth - 1), {0xc0}));
    CHECK(valid(wide, depth));
}

TEST_CASE("valid_msgpack returns false on a hostile 100000-deep nesting without crashing", "[validation]") {
    CHECK_FALSE(valid(nested_arrays(100'000), 256));
    CHECK_FALSE(valid(repeat(0x91, 100'000), 256));  // and unterminated
    // Even with no depth limit the walk is iterative: no stack overflow.
    CHECK(valid(nested_arrays(100'000), UINT32_MAX));
    CHECK_FALSE(valid(repeat(0x91, 100'000), UINT32_MAX));
    CHECK_FALSE(valid(repeat(0xdd, 100'000), UINT32_MAX));  // array32 headers cut short
}

TEST_CASE("valid_msgpack rejects lengths that claim more than the input holds", "[validation]") {
    CHECK_FALSE(valid({0xdb, 0xff, 0xff, 0xff, 0xff, 'a'}));         // str32 of 4 GiB
    CHECK_FALSE(valid({0xc6, 0xff, 0xff, 0xff, 0xff}));              // bin32
    CHECK_FALSE(valid({0xc9, 0xff, 0xff, 0xff, 0xff, 0x01}));        // ext32
    CHECK_FALSE(valid({0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0}));        // array32 of 4 G items
    CHECK_FALSE(valid({0xdf, 0xff, 0xff, 0xff, 0xff, 0xc0, 0xc0}));  // map32
    CHECK_FALSE(valid({0x82, 0x01, 0x02, 0x03}));                    // fixmap missing a value
}

TEST_CASE("valid_utf8 accepts well-formed text up to U+10FFFF", "[validation]") {
    CHECK(valid_utf8(""));
    CHECK(valid_utf8("plain ascii"));
    CHECK(valid_utf8("\xc2\x80"));          // U+0080, smallest 2-byte
    CHECK(valid_utf8("\xdf\xbf"));          // U+07FF
    CHECK(valid_utf8("\xe0\xa0\x80"));      // U+0800, smallest 3-byte
    CHECK(valid_utf8("\xed\x9f\xbf"));      // U+D7FF, just below the surrogates
    CHECK(valid_utf8("\xee\x80\x80"));      // U+E000, just above
    CHECK(valid_utf8("\xef\xbf\xbf"));      // U+FFFF
    CHECK(valid_utf8("\xf0\x90\x80\x80"));  // U+10000, smallest 4-byte
    CHECK(valid_utf8("\xf4\x8f\xbf\xbf"));  // U+10FFFF
    CHECK(valid_utf8("gr\xc3\xbc\xc3\x9f \xe2\x82\xac \xf0\x9f\x98\x80"));
    CHECK(valid_utf8(std::string_view("a\0b", 3)));  // NUL is a valid code point
}

TEST_CASE("valid_utf8 rejects overlong encodings", "[validation]") {
    CHECK_FALSE(valid_utf8("\xc0\x80"));
    CHECK_FALSE(valid_utf8("\xc0\xaf"));
    CHECK_FALSE(valid_utf8("\xc1\xbf"));
    CHECK_FALSE(valid_utf8("\xe0\x80\x80"));
    CHECK_FALSE(valid_utf8("\xe0\x9f\xbf"));
    CHECK_FALSE(valid_utf8("\xf0\x80\x80\x80"));
    CHECK_FALSE(valid_utf8("\xf0\x8f\xbf\xbf"));
}

TEST_CASE("valid_utf8 rejects UTF-16 surrogates", "[validation]") {
    CHECK_FALSE(valid_utf8("\xed\xa0\x80"));              // U+D800
    CHECK_FALSE(valid_utf8("\xed\xaf\xbf"));              // U+DBFF
    CHECK_FALSE(valid_utf8("\xed\xb0\x80"));              // U+DC00
    CHECK_FALSE(valid_utf8("\xed\xbf\xbf"));              // U+DFFF
    CHECK_FALSE(valid_utf8("\xed\xa0\xbd\xed\xb8\x80"));  // a CESU-8 surrogate pair
}

TEST_CASE("valid_utf8 rejects code points above U+10FFFF", "[validation]") {
    CHECK_FALSE(valid_utf8("\xf4\x90\x80\x80"));  // U+110000
    CHECK_FALSE(valid_utf8("\xf7\xbf\xbf\xbf"));
    CHECK_FALSE(valid_utf8("\xf5\x80\x80\x80"));
    CHECK_FALSE(valid_utf8("\xf8\x88\x80\x80\x80"));  // old 5-byte form
    CHECK_FALSE(valid_utf8("\xfc\x84\x80\x80\x80\x80"));
    CHECK_FALSE(valid_utf8("\xfe"));
    CHECK_FALSE(valid_utf8("\xff"));
}

TEST_CASE("valid_utf8 rejects truncated sequences and stray continuation bytes", "[validation]") {
    CHECK_FALSE(valid_utf8("\xc3"));
    CHECK_FALSE(valid_utf8("\xe2\x82"));
    CHECK_FALSE(valid_utf8("\xf0\x9f\x98"));
    CHECK_FALSE(valid_utf8("ab\xf0\x9f"));
    CHECK_FALSE(valid_utf8("\xc3x"));  // lead byte followed by a non-continuation
    CHECK_FALSE(valid_utf8("\xe2\x82x"));
    CHECK_FALSE(valid_utf8("\x80"));
    CHECK_FALSE(
        valid_utf8("a\xbf"
                   "b"));
}
