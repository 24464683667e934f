// A msgpack reader that walks the bytes without building a tree: one item at a time (a scalar,
// or the header of a map or array), and whole values skipped while being checked. Shared by
// eventd (records encoded straight from stored payloads, eventd/query/row_encoder.cpp; the
// depth check before a payload becomes a tree, eventd/query/record.cpp; request frames,
// eventd/server/frame.cpp), store (msgpack_extract, store/msgpack_extract.cpp) and eventctl
// (reply frames cut into each record's exact bytes; JSON and pretty output written while
// walking a record).
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
//
// This is the project's one msgpack reader that bounds nesting. Depth counts open containers:
// a top-level scalar is at depth 0, the outermost map or array opens depth 1, a map inside it
// depth 2, and so on — the count the shim's emit validator uses for MaxNestingDepth
// (kmes-shim/shimd/validation.cpp). Every Reader is made with the deepest nesting its user
// accepts; nesting past it is an error of its own (is_too_deep), never undefined recursion.
// Where a tree is wanted (nlohmann::json), the bytes are walked with skip() first and handed
// to nlohmann only when they passed: nlohmann's reader recurses once per level, unbounded.
#pragma once

#include <cerrno>
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
    double float_value = 0;  // float32 widened
    std::string_view bytes;  // string, binary, ext data (inside the reader's buffer)
    int8_t ext_type = 0;
    uint32_t count = 0;  // map pairs / array elements
};

// Depth limits that come from the spec rather than from one user; each user names its own
// limit beside the section it follows.
//
// A stored payload: the shim refuses a syscall payload nested deeper than MaxNestingDepth
// (PSD-003 §2.1.6–§2.1.7), whose valid range ends at 256 (PSD-003 §6.1). So every payload a
// valid configuration admits nests at most 256 deep and must be read whole. (Kernel emitters
// are not validated; a deeper payload from one is kept as bytes, or reads as NULL — never a
// crash.)
inline constexpr int kPayloadMaxDepth = 256;
// A record eventd sends (PSD-008 §8.8) is a payload map with the header fields merged in, or
// the header fields with the payload as bytes: it nests no deeper than its payload.
inline constexpr int kRecordMaxDepth = kPayloadMaxDepth;

// Which map keys skip() accepts. msgpack allows a key of any kind, and stored payloads may
// use them (a kernel emitter's, a client's {1: "x"}); protocol frames and replies, which
// nlohmann decodes, must have string keys.
enum class MapKeys : uint8_t { strings, any };

class Reader {
public:
    // `max_depth`: the deepest container nesting accepted (see above; at least 1).
    Reader(std::span<const uint8_t> bytes, int max_depth, MapKeys keys = MapKeys::strings)
        : bytes_(bytes), max_depth_(max_depth), keys_(keys) {}

    std::size_t pos() const { return pos_; }
    bool at_end() const { return pos_ == bytes_.size(); }
    int max_depth() const { return max_depth_; }
    bool next_is_map() const;
    bool next_is_string() const;
    bool next_is_bool() const;

    // The next item; for a map or an array only its header is consumed. Callers that walk
    // containers header by header check each one they open with check_depth.
    base::Result<Item> next();

    base::Result<uint32_t> map_header();
    base::Result<uint32_t> array_header();
    base::Result<std::string_view> string();

    // OK when a container may open at `depth` (1 for the outermost); otherwise the too-deep
    // error, naming the limit and the position of the container just read.
    base::Status check_depth(int depth) const;

    // Skips one value that sits inside `depth` open containers (0: a top-level value), so its
    // own containers open at depth + 1 and beyond. Map keys must be strings at every depth
    // (what nlohmann's decoder accepts) unless the reader was made with MapKeys::any; then a
    // key is skipped like any value. Recursion is bounded by max_depth.
    base::Status skip(int depth = 0);

private:
    base::Result<uint64_t> big_endian(std::size_t width);
    base::Result<std::string_view> take(uint64_t n);

    std::span<const uint8_t> bytes_;
    std::size_t pos_ = 0;
    std::size_t last_item_ = 0;  // where the item next() returned last begins
    int max_depth_;
    MapKeys keys_;
};

// Whether `error` (from a Reader) is the too-deep error rather than malformed bytes: the
// frame decoder answers the two differently, and the error code keeps them apart:
// ErrorCode::too_deep (ELOOP, the kernel's "too many levels") against ErrorCode::protocol.
inline bool is_too_deep(const base::Error& error) { return error.code == base::ErrorCode::too_deep; }

}  // namespace eventd::msgpack
