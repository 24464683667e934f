// Msgpack written byte by byte for the tests, so that each case picks its exact encoding
// (uint8 vs fixint, float32 vs float64, fixext vs ext8, str8 vs fixstr, map32 …), which an
// encoder choosing the smallest form would not let a test reach.
#pragma once

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string_view>
#include <utility>
#include <vector>

namespace eventctl::test {

using Bytes = std::vector<uint8_t>;

inline Bytes cat(std::initializer_list<Bytes> parts) {
    Bytes out;
    for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
}

// `tag` then `value` in `width` big-endian bytes.
inline Bytes tagged(uint8_t tag, uint64_t value, int width) {
    Bytes out{tag};
    for (int i = width - 1; i >= 0; --i) out.push_back(static_cast<uint8_t>(value >> (8 * i)));
    return out;
}

inline Bytes data_of(std::string_view s) { return Bytes(s.begin(), s.end()); }

// A string in its smallest form.
inline Bytes str(std::string_view s) {
    Bytes head = s.size() < 32      ? Bytes{static_cast<uint8_t>(0xa0 | s.size())}
                 : s.size() < 256   ? tagged(0xd9, s.size(), 1)
                 : s.size() < 65536 ? tagged(0xda, s.size(), 2)
                                    : tagged(0xdb, s.size(), 4);
    return cat({head, data_of(s)});
}

// A string with a chosen length width: 0xd9 (str8), 0xda (str16) or 0xdb (str32).
inline Bytes str_as(uint8_t tag, std::string_view s) {
    return cat({tagged(tag, s.size(), 1 << (tag - 0xd9)), data_of(s)});
}

inline Bytes f32(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return tagged(0xca, u, 4);
}

inline Bytes f64(double d) {
    uint64_t u;
    std::memcpy(&u, &d, sizeof u);
    return tagged(0xcb, u, 8);
}

// bin 8/16/32 by `tag` (0xc4..0xc6).
inline Bytes bin_as(uint8_t tag, std::string_view data) {
    return cat({tagged(tag, data.size(), 1 << (tag - 0xc4)), data_of(data)});
}

// fixext (0xd4..0xd8, data of 1/2/4/8/16 bytes) or ext 8/16/32 (0xc7..0xc9) by `tag`.
inline Bytes ext_as(uint8_t tag, int8_t type, std::string_view data) {
    Bytes head = tag >= 0xd4 ? Bytes{tag} : tagged(tag, data.size(), 1 << (tag - 0xc7));
    head.push_back(static_cast<uint8_t>(type));
    return cat({head, data_of(data)});
}

inline Bytes map_header(uint32_t n) {
    return n < 16 ? Bytes{static_cast<uint8_t>(0x80 | n)} : n < 65536 ? tagged(0xde, n, 2) : tagged(0xdf, n, 4);
}

inline Bytes array_header(uint32_t n) {
    return n < 16 ? Bytes{static_cast<uint8_t>(0x90 | n)} : n < 65536 ? tagged(0xdc, n, 2) : tagged(0xdd, n, 4);
}

// A map of already-encoded values under string keys, in this order.
inline Bytes map_of(std::initializer_list<std::pair<std::string_view, Bytes>> fields) {
    Bytes out = map_header(static_cast<uint32_t>(fields.size()));
    for (const auto& [k, v] : fields) out = cat({out, str(k), v});
    return out;
}

inline Bytes array_of(std::initializer_list<Bytes> values) {
    Bytes out = array_header(static_cast<uint32_t>(values.size()));
    for (const auto& v : values) out = cat({out, v});
    return out;
}

}  // namespace eventctl::test
