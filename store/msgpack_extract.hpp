// The SQL function msgpack_extract(payload BLOB, path TEXT) (PSD-008 §8.6.3): payload fields
// in WHERE, SORT, GROUP and the aggregates are read straight out of the stored msgpack
// without building a tree. The path is '$.a.b' (key b inside map a); it reaches map keys only.
//
// Result, by the msgpack type found at the path:
//   integer → INTEGER (a uint64 above INT64_MAX → REAL), float32/float64 → REAL,
//   string → TEXT, bool → INTEGER 1/0, bin → BLOB,
//   nil, missing key, map, array, ext, payload not a map, invalid msgpack, NULL payload → NULL.
// Invalid input never raises an SQL error: one bad payload must not abort a query.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/result.hpp"

namespace eventd::store {

// Register msgpack_extract on `db` (deterministic, UTF-8, innocuous).
kmes::Status register_msgpack_extract(sqlite3* db);

// The same extraction for C++ callers and tests. A path component list ("a", "b"), or the
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
