// Guid: a GUID's 16 bytes as KMES carries them (the boot id, the identity stamps; PSD-003
// §2.1.2, drawn in <kmes/kmes.h>) and as eventd stores them (BLOB columns, PSD-008 §3.1.1),
// and its one text form, the "standard GUID format" of PSD-008 §8.8:
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

namespace kmes {

using Guid = std::array<uint8_t, 16>;

inline constexpr std::size_t kGuidTextLength = 36;

// Writes the kGuidTextLength characters of the text form to `out` (no terminator): for
// encoders that must not allocate per value.
void write_guid_text(std::span<const uint8_t, 16> guid, char* out);

// The text form, "550e8400-e29b-41d4-a716-446655440000".
std::string guid_text(std::span<const uint8_t, 16> guid);

// The GUID a text names: the standard form, braces optional ("{…}"), hex digits in any case;
// nullopt for anything else (no other separators, no missing or extra digits).
std::optional<Guid> parse_guid(std::string_view text);

}  // namespace kmes
