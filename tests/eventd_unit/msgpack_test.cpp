// msgpack/reader.hpp and msgpack/writer.hpp (shared by store, eventd and eventctl): every form the
// writer produces reads back as the same item; the reader agrees with nlohmann's encoder on
// every integer width and on floats; malformed input is an error, never a crash.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "msgpack/reader.hpp"
#include "msgpack/writer.hpp"

namespace {

namespace mp = eventd::msgpack;
using nlohmann::json;

// Tests of forms, not of depth: the payload bound is as good as any.
constexpr int kAnyDepth = mp::kPayloadMaxDepth;

// n nested one-element arrays around nil: depth n.
mp::Bytes nested_arrays(int n) {
    mp::Bytes b(static_cast<size_t>(n), 0x91);
    b.push_back(0xc0);
    return b;
}

// n nested one-entry maps {"k": {"k": … nil}}: depth n.
mp::Bytes nested_maps(int n) {
    mp::Bytes b;
    for (int i = 0; i < n; ++i) b.insert(b.end(), {0x81, 0xa1, 'k'});
    b.push_back(0xc0);
    return b;
}

mp::Item read_one(const mp::Bytes& bytes) {
    mp::Reader in(bytes, kAnyDepth);
    auto item = in.next();
    REQUIRE(item.ok());
    CHECK(in.at_end());
    return item.value();
}

}  // namespace

TEST_CASE("integers read back with nlohmann's signedness at every width", "[msgpack]") {
    const std::vector<uint64_t> unsigned_values = {
        0, 1, 127, 128, 255, 256, 65535, 65536, 0xffffffffull, 0x100000000ull, std::numeric_limits<uint64_t>::max()};
    for (uint64_t v : unsigned_values) {
        INFO(v);
        mp::Bytes out;
        mp::put_unsigned(out, v);
        CHECK(out == json::to_msgpack(json(v)));  // the smallest form, like nlohmann
        const mp::Item item = read_one(out);
        CHECK(item.kind == mp::Kind::int_unsigned);
        CHECK(item.unsigned_value == v);
    }
    const std::vector<int64_t> negative_values = {-1,
                                                  -32,
                                                  -33,
                                                  -128,
                                                  -129,
                                                  -32768,
                                                  -32769,
                                                  INT32_MIN,
                                                  int64_t{INT32_MIN} - 1,
                                                  std::numeric_limits<int64_t>::min()};
    for (int64_t v : negative_values) {
        INFO(v);
        mp::Bytes out;
        mp::put_signed(out, v);
        CHECK(out == json::to_msgpack(json(v)));
        const mp::Item item = read_one(out);
        CHECK(item.kind == mp::Kind::int_signed);
        CHECK(item.signed_value == v);
    }
    // int8..int64 forms holding non-negative values are still signed (as nlohmann reads them).
    CHECK(read_one({0xd0, 0x05}).signed_value == 5);
    CHECK(read_one({0xd1, 0xff, 0xfe}).signed_value == -2);
    CHECK(read_one({0xd3, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}).signed_value == INT64_MAX);
}

TEST_CASE("floats: float64 always written, float32 read and widened", "[msgpack]") {
    for (double d : {0.0, -0.0, 0.1, 7.5, 1e300, -1e-300, std::numeric_limits<double>::infinity()}) {
        mp::Bytes out;
        mp::put_float64(out, d);
        REQUIRE(out.size() == 9);
        CHECK(out[0] == 0xcb);
        const mp::Item item = read_one(out);
        CHECK(item.kind == mp::Kind::float64);
        CHECK(std::signbit(item.float_value) == std::signbit(d));
        CHECK(item.float_value == d);
    }
    mp::Bytes nan;
    mp::put_float64(nan, std::nan(""));
    CHECK(std::isnan(read_one(nan).float_value));
    const mp::Item f32 = read_one({0xca, 0x3f, 0xc0, 0x00, 0x00});
    CHECK(f32.kind == mp::Kind::float32);
    CHECK(f32.float_value == 1.5);
}

TEST_CASE("strings, binary, ext and containers at every length form", "[msgpack]") {
    for (size_t n : {size_t{0}, size_t{31}, size_t{32}, size_t{255}, size_t{256}, size_t{65535}, size_t{65536}}) {
        INFO(n);
        const std::string s(n, 'x');
        mp::Bytes out;
        mp::put_string(out, s);
        CHECK(out == json::to_msgpack(json(s)));
        mp::Item item = read_one(out);
        CHECK(item.kind == mp::Kind::string);
        CHECK(item.bytes == s);

        const std::vector<uint8_t> data(n, 0xab);
        out.clear();
        mp::put_binary(out, data);
        item = read_one(out);
        CHECK(item.kind == mp::Kind::binary);
        CHECK(item.bytes.size() == n);

        out.clear();
        mp::put_ext(out, -7, data);
        item = read_one(out);
        CHECK(item.kind == mp::Kind::ext);
        CHECK(item.ext_type == -7);
        CHECK(item.bytes.size() == n);

        out.clear();
        mp::put_array_header(out, n);
        for (size_t i = 0; i < n; ++i) mp::put_nil(out);
        mp::Reader in(out, kAnyDepth);
        REQUIRE(in.array_header().value() == n);
        for (size_t i = 0; i < n; ++i) REQUIRE(in.skip().ok());
        CHECK(in.at_end());
    }
    for (size_t n : {size_t{1}, size_t{2}, size_t{4}, size_t{8}, size_t{16}}) {
        mp::Bytes out;
        mp::put_ext(out, 3, std::vector<uint8_t>(n, 1));
        CHECK(out.size() == 2 + n);  // fixext: no length byte
    }
    mp::Bytes map;
    mp::put_map_header(map, 2);
    mp::put_string(map, "a");
    mp::put_bool(map, true);
    mp::put_string(map, "b");
    mp::put_nil(map);
    CHECK(map == json::to_msgpack(json{{"a", true}, {"b", nullptr}}));
    mp::Reader in(map, kAnyDepth);
    REQUIRE(in.next_is_map());
    REQUIRE(in.map_header().value() == 2);
    CHECK(in.string().value() == "a");
    CHECK(in.next().value().boolean);
    CHECK(in.string().value() == "b");
    CHECK(in.next().value().kind == mp::Kind::nil);
    CHECK(in.at_end());
}

TEST_CASE("malformed input is an error", "[msgpack]") {
    const std::vector<mp::Bytes> bad = {
        {},                              // nothing
        {0xc1},                          // never used
        {0xa5, 'a', 'b'},                // string shorter than announced
        {0xcb, 0, 0},                    // truncated float64
        {0xdb, 0xff, 0xff, 0xff},        // truncated length
        {0xc6, 0x7f, 0xff, 0xff, 0xff},  // bin announcing 2 GiB
    };
    for (const mp::Bytes& b : bad) {
        mp::Reader in(b, kAnyDepth);
        CHECK_FALSE(in.skip().ok());
    }
    // skip(): map keys must be strings; nesting is capped.
    // (The reader keeps a view: the bytes must outlive it.)
    const mp::Bytes int_key_bytes = {0x81, 0x01, 0x02};
    mp::Reader int_key(int_key_bytes, kAnyDepth);
    CHECK(int_key.skip().error().message.find("not a string") != std::string::npos);
    const mp::Bytes deep = nested_arrays(kAnyDepth + 1);
    mp::Reader too_deep(deep, kAnyDepth);
    CHECK(too_deep.skip().error().message.find("nested deeper") != std::string::npos);
    // Typed reads refuse other kinds without consuming them.
    const mp::Bytes array_bytes = {0x91, 0xc0};
    mp::Reader not_a_map(array_bytes, kAnyDepth);
    CHECK_FALSE(not_a_map.map_header().ok());
    CHECK(not_a_map.pos() == 0);
    CHECK(not_a_map.array_header().value() == 1);
}

TEST_CASE("skip accepts nesting of exactly max_depth and refuses one more with the too-deep error", "[msgpack]") {
    const int limit = GENERATE(1, 32, mp::kPayloadMaxDepth);
    INFO("max_depth " << limit);
    for (const auto& make : {nested_arrays, nested_maps}) {
        const mp::Bytes at_limit = make(limit);
        mp::Reader ok(at_limit, limit);
        CHECK(ok.skip().ok());
        CHECK(ok.at_end());

        const mp::Bytes past_limit = make(limit + 1);
        mp::Reader deep(past_limit, limit);
        const auto st = deep.skip();
        REQUIRE_FALSE(st.ok());
        CHECK(mp::is_too_deep(st.error()));
        CHECK(st.error().message.find("nested deeper than " + std::to_string(limit) + " levels") != std::string::npos);
        CHECK(st.error().message.find("opens level " + std::to_string(limit + 1)) != std::string::npos);
    }
}

TEST_CASE("skip counts depth from the containers the caller says are open", "[msgpack]") {
    // A value inside 2 open containers may itself nest max_depth - 2 deep.
    const mp::Bytes value = nested_arrays(30);
    mp::Reader ok(value, 32);
    CHECK(ok.skip(2).ok());
    mp::Reader deep(value, 32);
    CHECK(mp::is_too_deep(deep.skip(3).error()));
}

TEST_CASE("siblings do not add up to depth", "[msgpack]") {
    mp::Bytes wide = {0x92};
    for (int i = 0; i < 2; ++i) {
        const mp::Bytes branch = nested_arrays(31);
        wide.insert(wide.end(), branch.begin(), branch.end());
    }
    mp::Reader in(wide, 32);
    CHECK(in.skip().ok());
    CHECK(in.at_end());
}

TEST_CASE("check_depth: the bound for callers walking containers header by header", "[msgpack]") {
    const mp::Bytes bytes = {0x91, 0x91, 0xc0};
    mp::Reader in(bytes, 1);
    REQUIRE(in.array_header().ok());
    CHECK(in.check_depth(1).ok());
    REQUIRE(in.array_header().ok());
    const auto st = in.check_depth(2);
    REQUIRE_FALSE(st.ok());
    CHECK(mp::is_too_deep(st.error()));
    CHECK(st.error().message == "msgpack nested deeper than 1 levels (the container at byte 1 opens level 2)");
}

TEST_CASE("malformed bytes are not the too-deep error", "[msgpack]") {
    const mp::Bytes truncated = {0x91, 0x91};
    mp::Reader in(truncated, 32);
    const auto st = in.skip();
    REQUIRE_FALSE(st.ok());
    CHECK_FALSE(mp::is_too_deep(st.error()));
}
