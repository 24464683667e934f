// Bytes as lowercase hexadecimal text and back: file ids, chain heads, keys and signatures in
// the store's metadata and in the sealing files (docs/STORE.md).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace base {

std::string hex_text(std::span<const uint8_t> bytes);

// Exactly out.size() bytes from 2 × out.size() hex digits (either case); false, with `out`
// unspecified, when `hex` is anything else.
bool hex_bytes(std::string_view hex, std::span<uint8_t> out);

}  // namespace base
