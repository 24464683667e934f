#include "msgpack_scan.hpp"

#include <cerrno>
#include <string>

namespace eventctl::msgpack {
namespace {

kmes::Error malformed(std::size_t pos, const std::string& what) {
    return kmes::Error{EPROTO, "malformed msgpack at byte " + std::to_string(pos) + ": " + what};
}

bool is_string_byte(uint8_t b) { return (b >= 0xa0 && b <= 0xbf) || (b >= 0xd9 && b <= 0xdb); }

}  // namespace

bool Reader::next_is_map() const {
    if (at_end()) return false;
    const uint8_t b = bytes_[pos_];
    return (b >= 0x80 && b <= 0x8f) || b == 0xde || b == 0xdf;
}

kmes::Result<uint64_t> Reader::big_endian(std::size_t width) {
    if (bytes_.size() - pos_ < width) return malformed(pos_, "truncated");
    uint64_t v = 0;
    for (std::size_t i = 0; i < width; ++i) v = (v << 8) | bytes_[pos_ + i];
    pos_ += width;
    return v;
}

kmes::Status Reader::advance(uint64_t n) {
    if (bytes_.size() - pos_ < n) return malformed(pos_, "truncated: " + std::to_string(n) + " bytes announced");
    pos_ += static_cast<std::size_t>(n);
    return {};
}

kmes::Result<uint32_t> Reader::map_header() {
    if (at_end()) return malformed(pos_, "truncated, expected a map");
    const uint8_t b = bytes_[pos_];
    if (b >= 0x80 && b <= 0x8f) {
        ++pos_;
        return static_cast<uint32_t>(b & 0x0f);
    }
    if (b != 0xde && b != 0xdf) return malformed(pos_, "expected a map");
    ++pos_;
    auto n = big_endian(b == 0xde ? 2 : 4);
    if (!n) return n.error();
    return static_cast<uint32_t>(n.value());
}

kmes::Result<uint32_t> Reader::array_header() {
    if (at_end()) return malformed(pos_, "truncated, expected an array");
    const uint8_t b = bytes_[pos_];
    if (b >= 0x90 && b <= 0x9f) {
        ++pos_;
        return static_cast<uint32_t>(b & 0x0f);
    }
    if (b != 0xdc && b != 0xdd) return malformed(pos_, "expected an array");
    ++pos_;
    auto n = big_endian(b == 0xdc ? 2 : 4);
    if (!n) return n.error();
    return static_cast<uint32_t>(n.value());
}

kmes::Result<std::string_view> Reader::string() {
    if (at_end()) return malformed(pos_, "truncated, expected a string");
    const uint8_t b = bytes_[pos_];
    if (!is_string_byte(b)) return malformed(pos_, "expected a string");
    ++pos_;
    uint64_t len = b & 0x1f;
    if (b >= 0xd9) {
        auto n = big_endian(std::size_t{1} << (b - 0xd9));
        if (!n) return n.error();
        len = n.value();
    }
    const std::size_t start = pos_;
    if (auto st = advance(len); !st) return st.error();
    return std::string_view(reinterpret_cast<const char*>(bytes_.data() + start), static_cast<std::size_t>(len));
}

kmes::Status Reader::skip() { return skip(0); }

kmes::Status Reader::skip(int depth) {
    if (depth > kMaxDepth) return malformed(pos_, "nested deeper than " + std::to_string(kMaxDepth) + " levels");
    if (at_end()) return malformed(pos_, "truncated, expected a value");
    const uint8_t b = bytes_[pos_];
    if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3) {
        ++pos_;
        return {};
    }
    if (is_string_byte(b)) {
        auto s = string();
        if (!s) return s.error();
        return {};
    }
    const bool is_map = (b >= 0x80 && b <= 0x8f) || b == 0xde || b == 0xdf;
    const bool is_array = (b >= 0x90 && b <= 0x9f) || b == 0xdc || b == 0xdd;
    if (is_map || is_array) {
        auto n = is_map ? map_header() : array_header();
        if (!n) return n.error();
        for (uint32_t i = 0; i < n.value(); ++i) {
            if (is_map) {
                if (at_end() || !is_string_byte(bytes_[pos_])) return malformed(pos_, "a map key that is not a string");
                if (auto key = string(); !key) return key.error();
            }
            if (auto st = skip(depth + 1); !st) return st;
        }
        return {};
    }
    ++pos_;
    switch (b) {
    case 0xc4: case 0xc5: case 0xc6: {  // bin 8/16/32
        auto n = big_endian(std::size_t{1} << (b - 0xc4));
        if (!n) return n.error();
        return advance(n.value());
    }
    case 0xc7: case 0xc8: case 0xc9: {  // ext 8/16/32: length, type byte, data
        auto n = big_endian(std::size_t{1} << (b - 0xc7));
        if (!n) return n.error();
        return advance(n.value() + 1);
    }
    case 0xca: return advance(4);
    case 0xcb: return advance(8);
    case 0xcc: case 0xcd: case 0xce: case 0xcf: return advance(std::size_t{1} << (b - 0xcc));
    case 0xd0: case 0xd1: case 0xd2: case 0xd3: return advance(std::size_t{1} << (b - 0xd0));
    case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8:  // fixext: type byte + 1..16 bytes
        return advance(1 + (std::size_t{1} << (b - 0xd4)));
    default:
        return malformed(pos_ - 1, "byte 0xc1 is not a msgpack value");
    }
}

}  // namespace eventctl::msgpack
