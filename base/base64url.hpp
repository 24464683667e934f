// base64url without padding (RFC 4648 §5): bytes as text that is safe in file names, JSON and
// shell arguments. Used for opaque tokens such as a stream's cursor. And the standard alphabet
// with padding (§4), for Sigma's base64 modifiers (detection/).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace base {

std::string base64url_encode(std::span<const uint8_t> bytes);

// Standard base64 with padding (RFC 4648 §4): what Sigma's base64 modifiers match.
std::string base64_encode(std::span<const uint8_t> bytes);

// The bytes `text` encodes; nullopt for a character outside the alphabet, padding, or a
// length no encoding produces (4k+1), or non-zero bits left over in the last character
// (so that every byte string has exactly one text).
std::optional<std::vector<uint8_t>> base64url_decode(std::string_view text);

}  // namespace base
