// The one text form of a GUID (kmes::Guid, <kmes/guid.hpp>), the "standard GUID format" of
// PSD-008 §8.8:
//
//   bytes   00 01 02 03  04 05  06 07  08 09  0a 0b 0c 0d 0e 0f
//   text    xxxxxxxx   - xxxx - xxxx - xxxx - xxxxxxxxxxxx          36 characters
//
// lowercase hex, the bytes in order (no byte swapping of the first three groups). Every place
// that writes or reads a GUID as text uses these.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace base {

inline constexpr std::size_t kGuidTextLength = 36;

// Writes the kGuidTextLength characters of the text form to `out` (no terminator): for
// encoders that must not allocate per value.
void write_guid_text(std::span<const uint8_t, 16> guid, char* out);

// The text form, "550e8400-e29b-41d4-a716-446655440000".
std::string guid_text(std::span<const uint8_t, 16> guid);

// The 16 bytes a text names (a kmes::Guid): the standard form, braces optional ("{…}"), hex
// digits in any case; nullopt for anything else (no other separators, no missing or extra
// digits).
std::optional<std::array<uint8_t, 16>> parse_guid(std::string_view text);

}  // namespace base
