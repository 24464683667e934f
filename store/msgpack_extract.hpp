// The SQL function msgpack_extract(payload BLOB, path TEXT) (PSD-008 §8.6.3): payload fields
// in WHERE, SORT, GROUP and the aggregates are read straight out of the stored msgpack
// without building a tree. The path is '$.a.b' (key b inside map a); it reaches map keys only.
//
// Maps are searched by their string keys; a pair whose key is not a string is skipped. A
// payload whose top-level map has a key of bytes, ext, array or map has no fields at all
// (records show it whole as `payload`): every path in it is NULL.
//
// Result, by the msgpack type found at the path:
//   integer → INTEGER (a uint64 above INT64_MAX → REAL), float32/float64 → REAL,
//   string → TEXT, bool → INTEGER 1/0,
//   bin, array, map → a tagged BLOB (ExtractedKind below: one kind byte, then the bytes),
//   nil, missing key, ext, payload not a map, invalid msgpack, NULL payload → NULL.
// Invalid input never raises an SQL error: one bad payload must not abort a query.
//
// These results are frozen: expression indexes store them (PSD-008 §3.3.6). Changing what a
// value extracts to would silently corrupt every index in every store. (One change was made,
// by issue 23: the paths into a payload keyed at the top level by bytes/ext/array/map, which
// until then found the string keys beside such a key. An index built before it that holds
// such rows disagrees for those rows; docs/OPERATIONS.md "Upgrading" says to REINDEX.)
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/result.hpp"

namespace eventd::store {

// Register msgpack_extract and msgpack_array_has on `db` (deterministic, UTF-8, innocuous).
//   msgpack_array_has(v, x): 1 when v is an extracted array (below) with an element equal to
//   x — text compared ignoring ASCII case (as COLLATE NOCASE), numbers exactly (an integer
//   and a float are equal only when they are the same number) — else 0; never NULL.
base::Status register_msgpack_extract(sqlite3* db);

// The first byte of a BLOB msgpack_extract returns. SQLite orders BLOBs by memcmp, so the kind
// byte makes every byte string sort before every array and every array before every map, each
// kind ordered — and grouped — by its bytes (docs/query-language.md §7). The rest is the raw
// data (bin) or the value's msgpack bytes exactly as stored (array, map).
enum class ExtractedKind : uint8_t { binary = 0x01, array = 0x02, map = 0x03 };
struct ExtractedBlob {
    ExtractedKind kind;
    std::span<const uint8_t> body;
};
// A BLOB result read back; nullopt when `blob` is not one (empty, unknown kind byte).
std::optional<ExtractedBlob> read_extracted_blob(std::span<const uint8_t> blob);

// The bytes of the value at `path` inside the msgpack value `data` (the walk msgpack_extract
// makes); nullopt when there is none (see the table above). Bounded by `max_depth`.
std::optional<std::span<const uint8_t>> locate_path(std::span<const uint8_t> data, std::span<const std::string> path,
                                                    int max_depth);

// The same extraction for C++ callers and tests (a BLOB result as its tagged bytes). A path component list ("a", "b"), or the
// SQL form parsed by parse_extract_path.
struct ExtractNull {
    bool operator==(const ExtractNull&) const = default;
};
using ExtractValue = std::variant<ExtractNull, int64_t, double, std::string, std::vector<uint8_t>>;

// "$.a.b" → {"a", "b"}; nullopt when the text is not '$' followed by one or more '.key'
// (empty components are invalid).
std::optional<std::vector<std::string>> parse_extract_path(std::string_view path);

ExtractValue msgpack_extract(const uint8_t* data, size_t size, const std::vector<std::string>& path);

}  // namespace eventd::store
