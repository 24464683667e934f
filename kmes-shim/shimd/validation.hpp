// Input checks of the syscall emission path (PSD-003 §4.1.2 steps 7–8). Both are iterative
// and bounded by the input length: the shim never recurses on hostile input.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace kmes::shim {

// Strict UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF).
bool valid_utf8(std::string_view text);

// Exactly one well-formed msgpack value spanning all of `bytes`, with containers nested at
// most `max_depth` deep (a top-level map or array is depth 1). The empty input is not a value.
bool valid_msgpack(std::span<const uint8_t> bytes, uint32_t max_depth);

}  // namespace kmes::shim
