// FNV-1a 64: a small, stable hash of bytes — the same on every machine and in every version,
// which is what its users need (identity GUIDs derived in the shim, ids of shard files and of
// forwarded synthetic records). Not for anything an attacker must not be able to collide.
#pragma once

#include <cstdint>
#include <string_view>

namespace base {

inline constexpr uint64_t kFnv1aOffsetBasis = 0xcbf29ce484222325ull;
// A second starting value (the basis with its halves swapped), for a second, independent
// 64 bits of the same bytes.
inline constexpr uint64_t kFnv1aSecondBasis = 0x84222325cbf29ce4ull;

// `hash` continued over `bytes`; start from kFnv1aOffsetBasis (or kFnv1aSecondBasis).
inline uint64_t fnv1a64(uint64_t hash, std::string_view bytes) {
    for (const char c : bytes) {
        hash ^= static_cast<uint8_t>(c);
        hash *= 0x100000001b3ull;
    }
    return hash;
}

}  // namespace base
