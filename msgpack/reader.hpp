// A msgpack reader that walks the bytes without building a tree: one item at a time (a scalar,
// or the header of a map or array), and whole values skipped while being checked. Shared by
// eventd (records encoded straight from stored payloads, eventd/query/row_encoder.hpp) and
// eventctl (reply frames cut into each record's exact bytes; JSON and pretty output written
// while walking a record).
//
//   first byte          value                   first byte          value
//   0x00-0x7f / 0xe0-   positive/negative       0xc4-0xc6           bin 8/16/32
//   0x80-0x8f           fixmap                  0xc7-0xc9           ext 8/16/32
//   0x90-0x9f           fixarray                0xca / 0xcb         float32 / float64
//   0xa0-0xbf           fixstr                  0xcc-0xd3           uint/int 8..64
//   0xc0 nil, 0xc2/c3   false/true              0xd4-0xd8           fixext 1..16
//   0xc1                never used (invalid)    0xd9-0xdb, 0xdc-df  str, array, map 8/16/32
//
// Integers are typed the way nlohmann's msgpack decoder types them (positive fixint and uint*
// unsigned; negative fixint and int* signed), so code walking bytes and code reading nlohmann
// trees agree on every value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "base/result.hpp"

namespace eventd::msgpack {

enum class Kind : uint8_t {
    nil,
    boolean,
    int_signed,
    int_unsigned,
    float32,
    float64,
    string,
    binary,
    ext,
    map,    // header only: `count` key/value pairs follow
    array,  // header only: `count` values follow
};

// One item. Only the members of its kind are meaningful.
struct Item {
    Kind kind = Kind::nil;
    bool boolean = false;
    int64_t signed_value = 0;
    uint64_t unsigned_value = 0;
    double float_value = 0;   // float32 widened
    std::string_view bytes;   // string, binary, ext data (inside the reader's buffer)
    int8_t ext_type = 0;
    uint32_t count = 0;       // map pairs / array elements
};

class Reader {
public:
    explicit Reader(std::span<const uint8_t> bytes) : bytes_(bytes) {}

    std::size_t pos() const { return pos_; }
    bool at_end() const { return pos_ == bytes_.size(); }
    bool next_is_map() const;
    bool next_is_string() const;

    // The next item; for a map or an array only its header is consumed.
    kmes::Result<Item> next();

    kmes::Result<uint32_t> map_header();
    kmes::Result<uint32_t> array_header();
    kmes::Result<std::string_view> string();

    // Skips one value. Map keys must be strings at every depth (what nlohmann's decoder
    // accepts); nesting is capped so a hostile frame cannot exhaust the stack.
    kmes::Status skip();

private:
    kmes::Status skip(int depth);
    kmes::Result<uint64_t> big_endian(std::size_t width);
    kmes::Result<std::string_view> take(uint64_t n);

    std::span<const uint8_t> bytes_;
    std::size_t pos_ = 0;
};

inline constexpr int kMaxDepth = 256;

}  // namespace eventd::msgpack
