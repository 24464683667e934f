// Guid: a GUID's 16 bytes as KMES carries them (the boot id, the identity stamps; PSD-003
// §2.1.2, drawn in <kmes/kmes.h>) and as eventd stores them (BLOB columns, PSD-008 §3.1.1).
// The one type for it, part of the ABI (the event view carries it). Its one text form lives in
// the project's internal foundation: base/guid_text.hpp.
#pragma once

#include <array>
#include <cstdint>

namespace kmes {

using Guid = std::array<uint8_t, 16>;

}  // namespace kmes
