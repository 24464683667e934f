#include "value_cases.hpp"

#include <cmath>
#include <limits>

namespace eventctl::test {
namespace {

std::vector<ValueCase> build() {
    const double inf = std::numeric_limits<double>::infinity();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const float finf = std::numeric_limits<float>::infinity();
    const std::string long_text(70000, 'x');  // str32 needed; also past any small buffer
    std::vector<ValueCase> c = {
        {"nil", {0xc0}},
        {"false", {0xc2}},
        {"true", {0xc3}},
        // integers: every width, both signs, the extremes
        {"positive fixint 0", {0x00}},
        {"positive fixint 127", {0x7f}},
        {"negative fixint -1", {0xff}},
        {"negative fixint -32", {0xe0}},
        {"uint8 5", tagged(0xcc, 5, 1)},
        {"uint8 255", tagged(0xcc, 255, 1)},
        {"uint16 65535", tagged(0xcd, 65535, 2)},
        {"uint32 max", tagged(0xce, 0xffffffffu, 4)},
        {"uint64 small", tagged(0xcf, 7, 8)},
        {"uint64 max", tagged(0xcf, std::numeric_limits<uint64_t>::max(), 8)},
        {"int8 -128", tagged(0xd0, 0x80, 1)},
        {"int8 +5", tagged(0xd0, 5, 1)},
        {"int16 -32768", tagged(0xd1, 0x8000, 2)},
        {"int16 -2", tagged(0xd1, 0xfffe, 2)},
        {"int32 min", tagged(0xd2, 0x80000000u, 4)},
        {"int32 +70000", tagged(0xd2, 70000, 4)},
        {"int64 min", tagged(0xd3, 0x8000000000000000ull, 8)},
        {"int64 -1", tagged(0xd3, 0xffffffffffffffffull, 8)},
        {"int64 max", tagged(0xd3, 0x7fffffffffffffffull, 8)},
        {"timestamp ns", tagged(0xcf, 1763830522678123456ull, 8)},
        // floats: both widths, shortest forms, non-finite, signed zero, extremes
        {"float64 7.5", f64(7.5)},
        {"float64 0.1", f64(0.1)},
        {"float64 1e+20", f64(1e20)},
        {"float64 1e300", f64(1e300)},
        {"float64 -1e-300", f64(-1e-300)},
        {"float64 1.0", f64(1.0)},
        {"float64 -0.0", f64(-0.0)},
        {"float64 0.0", f64(0.0)},
        {"float64 123456789012345680", f64(123456789012345680.0)},
        {"float64 1/3", f64(1.0 / 3)},
        {"float64 denormal min", f64(std::numeric_limits<double>::denorm_min())},
        {"float64 max", f64(std::numeric_limits<double>::max())},
        {"float64 lowest", f64(std::numeric_limits<double>::lowest())},
        {"float64 nan", f64(nan)},
        {"float64 -nan", f64(-nan)},
        {"float64 +inf", f64(inf)},
        {"float64 -inf", f64(-inf)},
        {"float32 0.1", f32(0.1f)},
        {"float32 7.5", f32(7.5f)},
        {"float32 -0.0", f32(-0.0f)},
        {"float32 max", f32(std::numeric_limits<float>::max())},
        {"float32 denormal", f32(std::numeric_limits<float>::denorm_min())},
        {"float32 nan", f32(std::numeric_limits<float>::quiet_NaN())},
        {"float32 +inf", f32(finf)},
        {"float32 -inf", f32(-finf)},
        // strings: sizes, widths, everything that needs escaping or replacing
        {"empty string", str("")},
        {"plain ascii", str("kacs.access_check")},
        {"str8 form", str_as(0xd9, "short")},
        {"str16 form", str_as(0xda, "short")},
        {"str32 form", str_as(0xdb, "short")},
        {"long string", str(long_text)},
        {"quote", str("say \"hi\"")},
        {"backslash", str("C:\\path\\")},
        {"newline tab cr", str("a\nb\tc\rd")},
        {"backspace formfeed", str("a\bb\fc")},
        {"control chars", str(std::string("\x01\x02\x1f\x00z", 5))},
        {"DEL", str("a\x7f"
                    "b")},
        {"utf-8 2,3,4 bytes", str("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80")},
        {"C1 control U+0085", str("a\xc2\x85"
                                  "b")},
        {"invalid: lone 0xff", str("a\xff"
                                   "b")},
        {"invalid: lone continuation", str("\x80")},
        {"invalid: overlong", str("\xc0\xaf")},
        {"invalid: surrogate", str("\xed\xa0\x80")},
        {"invalid: above U+10FFFF", str("\xf4\x90\x80\x80")},
        {"invalid: truncated at end", str("ab\xe2\x82")},
        {"invalid and escapes", str("\"\xfe\n")},
        // bin and ext in every form; ext types negative, zero, extremes
        {"bin8 empty", bin_as(0xc4, "")},
        {"bin8", bin_as(0xc4, std::string("\x00\x01\xab\xff", 4))},
        {"bin16", bin_as(0xc5, "hello")},
        {"bin32", bin_as(0xc6, "hello")},
        {"fixext1 type 1", ext_as(0xd4, 1, "\x2a")},
        {"fixext2 type -1", ext_as(0xd5, -1, "ab")},
        {"fixext4 type -128", ext_as(0xd6, -128, "abcd")},
        {"fixext8 type 127", ext_as(0xd7, 127, "abcdefgh")},
        {"fixext16 type 0", ext_as(0xd8, 0, "0123456789abcdef")},
        {"ext8 type -5", ext_as(0xc7, -5, "xyz")},
        {"ext8 empty", ext_as(0xc7, 3, "")},
        {"ext16", ext_as(0xc8, 9, "xyz")},
        {"ext32", ext_as(0xc9, -9, "xyz")},
        // containers
        {"empty map", map_header(0)},
        {"empty array", array_header(0)},
        {"array16 form", cat({tagged(0xdc, 2, 2), Bytes{0x01}, str("x")})},
        {"array32 form", cat({tagged(0xdd, 1, 4), Bytes{0xc0}})},
        {"map16 form", cat({tagged(0xde, 1, 2), str("k"), Bytes{0x01}})},
        {"map32 form", cat({tagged(0xdf, 1, 4), str("k"), Bytes{0x01}})},
        {"nested", map_of({{"k", Bytes{0x01}}, {"l", array_of({Bytes{0x01}, str("x"), map_header(0)})}})},
        {"nested tags", array_of({bin_as(0xc4, "\x01"), f64(nan), ext_as(0xd4, -3, "z"), map_of({{"f", f64(-inf)}})})},
        {"nested odd keys", map_of({{"a b", Bytes{0x01}}, {"q\"\n", str("\xff")}, {"", array_header(0)}})},
    };
    Bytes many = array_header(20);
    for (int i = 0; i < 20; ++i) many = cat({many, Bytes{static_cast<uint8_t>(i)}});
    c.push_back({"array of 20", many});
    Bytes deep = map_of({{"leaf", Bytes{0xc3}}});
    for (int i = 0; i < 200; ++i) deep = cat({array_header(1), deep});
    c.push_back({"200 levels deep", deep});
    return c;
}

}  // namespace

const std::vector<ValueCase>& value_cases() {
    static const std::vector<ValueCase> kCases = build();
    return kCases;
}

const std::vector<std::string>& key_cases() {
    static const std::vector<std::string> kKeys = {
        "timestamp",   "event_type", "caf\xc3\xa9",           "a b",     "a=b",     "",         "q\"",
        "back\\slash", "tab\t",      std::string("nul\0", 4), "del\x7f", "bad\xff", "\xc2\x85", "-x_1.y",
    };
    return kKeys;
}

Bytes record_with(std::string_view key, const Bytes& value) { return cat({map_header(1), str(key), value}); }

}  // namespace eventctl::test
