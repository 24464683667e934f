#include "msgpack/writer.hpp"

#include <cstring>
#include <limits>

namespace eventd::msgpack {
namespace {

void put_be(Bytes& out, uint64_t v, int bytes) {
    for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

// A length-prefixed form: `n` in the first of the three widths it fits.
void put_sized(Bytes& out, size_t n, uint8_t b8, uint8_t b16, uint8_t b32) {
    if (n <= 0xff) {
        out.push_back(b8);
        put_be(out, n, 1);
    } else if (n <= 0xffff) {
        out.push_back(b16);
        put_be(out, n, 2);
    } else {
        out.push_back(b32);
        put_be(out, n, 4);
    }
}

void put_container(Bytes& out, size_t n, uint8_t fix, uint8_t b16, uint8_t b32) {
    if (n <= 15) {
        out.push_back(static_cast<uint8_t>(fix | n));
    } else if (n <= 0xffff) {
        out.push_back(b16);
        put_be(out, n, 2);
    } else {
        out.push_back(b32);
        put_be(out, n, 4);
    }
}

}  // namespace

void put_nil(Bytes& out) { out.push_back(0xc0); }
void put_bool(Bytes& out, bool v) { out.push_back(v ? 0xc3 : 0xc2); }

void put_unsigned(Bytes& out, uint64_t v) {
    if (v < 128) {
        out.push_back(static_cast<uint8_t>(v));
    } else if (v <= 0xff) {
        out.push_back(0xcc);
        put_be(out, v, 1);
    } else if (v <= 0xffff) {
        out.push_back(0xcd);
        put_be(out, v, 2);
    } else if (v <= 0xffffffffu) {
        out.push_back(0xce);
        put_be(out, v, 4);
    } else {
        out.push_back(0xcf);
        put_be(out, v, 8);
    }
}

void put_signed(Bytes& out, int64_t v) {
    if (v >= 0) return put_unsigned(out, static_cast<uint64_t>(v));
    const auto u = static_cast<uint64_t>(v);
    if (v >= -32) {
        out.push_back(static_cast<uint8_t>(v));
    } else if (v >= std::numeric_limits<int8_t>::min()) {
        out.push_back(0xd0);
        put_be(out, u, 1);
    } else if (v >= std::numeric_limits<int16_t>::min()) {
        out.push_back(0xd1);
        put_be(out, u, 2);
    } else if (v >= std::numeric_limits<int32_t>::min()) {
        out.push_back(0xd2);
        put_be(out, u, 4);
    } else {
        out.push_back(0xd3);
        put_be(out, u, 8);
    }
}

void put_float64(Bytes& out, double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    out.push_back(0xcb);  // PSD-008 §8.8: float64, never narrowed
    put_be(out, bits, 8);
}

void put_string(Bytes& out, std::string_view s) {
    if (s.size() <= 31) {
        out.push_back(static_cast<uint8_t>(0xa0 | s.size()));
    } else {
        put_sized(out, s.size(), 0xd9, 0xda, 0xdb);
    }
    out.insert(out.end(), s.begin(), s.end());
}

void put_binary(Bytes& out, std::span<const uint8_t> data) {
    put_sized(out, data.size(), 0xc4, 0xc5, 0xc6);
    out.insert(out.end(), data.begin(), data.end());
}

void put_ext(Bytes& out, int8_t type, std::span<const uint8_t> data) {
    switch (data.size()) {
        case 1:
            out.push_back(0xd4);
            break;
        case 2:
            out.push_back(0xd5);
            break;
        case 4:
            out.push_back(0xd6);
            break;
        case 8:
            out.push_back(0xd7);
            break;
        case 16:
            out.push_back(0xd8);
            break;
        default:
            put_sized(out, data.size(), 0xc7, 0xc8, 0xc9);
    }
    out.push_back(static_cast<uint8_t>(type));
    out.insert(out.end(), data.begin(), data.end());
}

void put_map_header(Bytes& out, size_t pairs) { put_container(out, pairs, 0x80, 0xde, 0xdf); }
void put_array_header(Bytes& out, size_t elements) { put_container(out, elements, 0x90, 0xdc, 0xdd); }

}  // namespace eventd::msgpack
