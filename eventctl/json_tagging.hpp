// JSON output of records (--format jsonl and json). Values JSON cannot carry are tagged so that
// every line parses and nothing is lost:
//   bin                 → {"$binary":"<hex>"}
//   ext (type N)        → {"$extension":{"type":N,"data":"<hex>"}}      N is the signed msgpack type
//   NaN / +inf / -inf   → {"$float":"nan"} / {"$float":"+inf"} / {"$float":"-inf"}
// nlohmann's msgpack decoder gives bin as binary without a subtype and ext as binary with one,
// which is what tells the two apart. Invalid UTF-8 in strings becomes U+FFFD.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace eventctl {

using Json = nlohmann::ordered_json;  // keeps eventd's key order (header fields first)

std::string to_hex(const std::vector<uint8_t>& bytes);

// The signed msgpack ext type of a binary value that has a subtype.
int ext_type(const Json::binary_t& binary);

// A copy of `value` with the tags above applied at every depth.
Json tag_for_json(const Json& value);

// Compact one-line JSON of a record, tags applied.
std::string record_to_json(const Json& record);

}  // namespace eventctl
