// A msgpack reader that only walks the bytes: reads map/array headers and strings, and skips
// whole values while checking them. eventctl uses it to cut a reply frame into the exact bytes
// of each record (so `--format msgpack` passes them on unchanged, floats stay float64) and to
// make sure nlohmann's decoder will accept every record before anything is committed to stdout.
//
//   first byte          value                   first byte          value
//   0x00-0x7f / 0xe0-   positive/negative       0xc4-0xc6           bin 8/16/32
//   0x80-0x8f           fixmap                  0xc7-0xc9           ext 8/16/32
//   0x90-0x9f           fixarray                0xca / 0xcb         float32 / float64
//   0xa0-0xbf           fixstr                  0xcc-0xd3           uint/int 8..64
//   0xc0 nil, 0xc2/c3   false/true              0xd4-0xd8           fixext 1..16
//   0xc1                never used (invalid)    0xd9-0xdb, 0xdc-df  str, array, map 8/16/32
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "kmes/result.hpp"

namespace eventctl::msgpack {

class Reader {
public:
    explicit Reader(std::span<const uint8_t> bytes) : bytes_(bytes) {}

    std::size_t pos() const { return pos_; }
    bool at_end() const { return pos_ == bytes_.size(); }
    bool next_is_map() const;

    kmes::Result<uint32_t> map_header();
    kmes::Result<uint32_t> array_header();
    kmes::Result<std::string_view> string();

    // Skips one value. Map keys must be strings at every depth (what the record decoder
    // accepts); nesting is capped so a hostile frame cannot exhaust the stack.
    kmes::Status skip();

private:
    kmes::Status skip(int depth);
    kmes::Result<uint64_t> big_endian(std::size_t width);
    kmes::Status advance(uint64_t n);

    std::span<const uint8_t> bytes_;
    std::size_t pos_ = 0;
};

inline constexpr int kMaxDepth = 256;

}  // namespace eventctl::msgpack
