#include "msgpack/reader.hpp"

#include <cerrno>
#include <cstring>
#include <string>

namespace eventd::msgpack {
namespace {

base::Error malformed(std::size_t pos, const std::string& what) {
    return base::Error{EPROTO, "malformed msgpack at byte " + std::to_string(pos) + ": " + what};
}

bool is_string_byte(uint8_t b) { return (b >= 0xa0 && b <= 0xbf) || (b >= 0xd9 && b <= 0xdb); }
bool is_map_byte(uint8_t b) { return (b >= 0x80 && b <= 0x8f) || b == 0xde || b == 0xdf; }
bool is_array_byte(uint8_t b) { return (b >= 0x90 && b <= 0x9f) || b == 0xdc || b == 0xdd; }

}  // namespace

bool Reader::next_is_map() const { return !at_end() && is_map_byte(bytes_[pos_]); }
bool Reader::next_is_bool() const { return !at_end() && (bytes_[pos_] == 0xc2 || bytes_[pos_] == 0xc3); }
bool Reader::next_is_string() const { return !at_end() && is_string_byte(bytes_[pos_]); }

base::Result<uint64_t> Reader::big_endian(std::size_t width) {
    if (bytes_.size() - pos_ < width) return malformed(pos_, "truncated");
    uint64_t v = 0;
    for (std::size_t i = 0; i < width; ++i) v = (v << 8) | bytes_[pos_ + i];
    pos_ += width;
    return v;
}

base::Result<std::string_view> Reader::take(uint64_t n) {
    if (bytes_.size() - pos_ < n) return malformed(pos_, "truncated: " + std::to_string(n) + " bytes announced");
    const std::size_t start = pos_;
    pos_ += static_cast<std::size_t>(n);
    return std::string_view(reinterpret_cast<const char*>(bytes_.data() + start), static_cast<std::size_t>(n));
}

base::Result<Item> Reader::next() {
    if (at_end()) return malformed(pos_, "truncated, expected a value");
    const std::size_t at = pos_;
    last_item_ = at;
    const uint8_t b = bytes_[pos_++];
    Item item;
    // Fixed forms: the value (or length) is in the first byte.
    if (b <= 0x7f) {
        item.kind = Kind::int_unsigned;
        item.unsigned_value = b;
        return item;
    }
    if (b >= 0xe0) {
        item.kind = Kind::int_signed;
        item.signed_value = static_cast<int8_t>(b);
        return item;
    }
    if (b <= 0x8f || (b >= 0x90 && b <= 0x9f)) {
        item.kind = b <= 0x8f ? Kind::map : Kind::array;
        item.count = b & 0x0f;
        return item;
    }
    if (b <= 0xbf) {  // fixstr
        item.kind = Kind::string;
        auto s = take(b & 0x1f);
        if (!s) return s.error();
        item.bytes = s.value();
        return item;
    }
    // Forms with a length or value after the first byte.
    auto length = [&](std::size_t width) -> base::Result<std::string_view> {
        auto n = big_endian(width);
        if (!n) return n.error();
        return take(n.value());
    };
    auto ext_body = [&](uint64_t n) -> base::Result<Item> {
        auto type = big_endian(1);
        if (!type) return type.error();
        auto data = take(n);
        if (!data) return data.error();
        item.kind = Kind::ext;
        item.ext_type = static_cast<int8_t>(static_cast<uint8_t>(type.value()));
        item.bytes = data.value();
        return item;
    };
    switch (b) {
        case 0xc0:
            item.kind = Kind::nil;
            return item;
        case 0xc2:
        case 0xc3:
            item.kind = Kind::boolean;
            item.boolean = b == 0xc3;
            return item;
        case 0xc4:
        case 0xc5:
        case 0xc6: {  // bin 8/16/32
            auto data = length(std::size_t{1} << (b - 0xc4));
            if (!data) return data.error();
            item.kind = Kind::binary;
            item.bytes = data.value();
            return item;
        }
        case 0xc7:
        case 0xc8:
        case 0xc9: {  // ext 8/16/32: length, type byte, data
            auto n = big_endian(std::size_t{1} << (b - 0xc7));
            if (!n) return n.error();
            return ext_body(n.value());
        }
        case 0xca: {
            auto bits = big_endian(4);
            if (!bits) return bits.error();
            const auto u = static_cast<uint32_t>(bits.value());
            float f;
            std::memcpy(&f, &u, sizeof f);
            item.kind = Kind::float32;
            item.float_value = f;
            return item;
        }
        case 0xcb: {
            auto bits = big_endian(8);
            if (!bits) return bits.error();
            const uint64_t u = bits.value();
            std::memcpy(&item.float_value, &u, sizeof u);
            item.kind = Kind::float64;
            return item;
        }
        case 0xcc:
        case 0xcd:
        case 0xce:
        case 0xcf: {
            auto v = big_endian(std::size_t{1} << (b - 0xcc));
            if (!v) return v.error();
            item.kind = Kind::int_unsigned;
            item.unsigned_value = v.value();
            return item;
        }
        case 0xd0:
        case 0xd1:
        case 0xd2:
        case 0xd3: {
            const std::size_t width = std::size_t{1} << (b - 0xd0);
            auto v = big_endian(width);
            if (!v) return v.error();
            // Sign-extend from the encoded width.
            const int shift = static_cast<int>(64 - 8 * width);
            item.kind = Kind::int_signed;
            item.signed_value = static_cast<int64_t>(v.value() << shift) >> shift;
            return item;
        }
        case 0xd4:
        case 0xd5:
        case 0xd6:
        case 0xd7:
        case 0xd8:  // fixext: type byte + 1..16 bytes
            return ext_body(uint64_t{1} << (b - 0xd4));
        case 0xd9:
        case 0xda:
        case 0xdb: {
            auto s = length(std::size_t{1} << (b - 0xd9));
            if (!s) return s.error();
            item.kind = Kind::string;
            item.bytes = s.value();
            return item;
        }
        case 0xdc:
        case 0xdd:
        case 0xde:
        case 0xdf: {
            auto n = big_endian(b == 0xdc || b == 0xde ? 2 : 4);
            if (!n) return n.error();
            item.kind = b <= 0xdd ? Kind::array : Kind::map;
            item.count = static_cast<uint32_t>(n.value());
            return item;
        }
        default:
            return malformed(at, "byte 0xc1 is not a msgpack value");
    }
}

base::Result<uint32_t> Reader::map_header() {
    if (!next_is_map()) return malformed(pos_, at_end() ? "truncated, expected a map" : "expected a map");
    auto item = next();
    if (!item) return item.error();
    return item->count;
}

base::Result<uint32_t> Reader::array_header() {
    if (at_end() || !is_array_byte(bytes_[pos_]))
        return malformed(pos_, at_end() ? "truncated, expected an array" : "expected an array");
    auto item = next();
    if (!item) return item.error();
    return item->count;
}

base::Result<std::string_view> Reader::string() {
    if (!next_is_string()) return malformed(pos_, at_end() ? "truncated, expected a string" : "expected a string");
    auto item = next();
    if (!item) return item.error();
    return item->bytes;
}

base::Status Reader::check_depth(int depth) const {
    if (depth <= max_depth_) return {};
    return base::Error{base::ErrorCode::too_deep, "msgpack nested deeper than " + std::to_string(max_depth_) +
                                                      " levels (the container at byte " + std::to_string(last_item_) +
                                                      " opens level " + std::to_string(depth) + ")"};
}

base::Status Reader::skip(int depth) {
    auto item = next();
    if (!item) return item.error();
    if (item->kind != Kind::map && item->kind != Kind::array) return {};
    if (auto st = check_depth(depth + 1); !st) return st;
    const bool is_map = item->kind == Kind::map;
    for (uint32_t i = 0; i < item->count; ++i) {
        if (is_map && keys_ == MapKeys::any) {
            if (auto st = skip(depth + 1); !st) return st;
        } else if (is_map) {
            if (!next_is_string())
                return malformed(pos_, at_end() ? "truncated, expected a string" : "a map key that is not a string");
            if (auto key = string(); !key) return key.error();
        }
        if (auto st = skip(depth + 1); !st) return st;
    }
    return {};
}

}  // namespace eventd::msgpack
