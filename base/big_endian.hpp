// Unsigned integers as big-endian bytes: how every byte-defined message of the store is written
// (the hash chain's canonical row, docs/STORE.md §8; the signed checkpoint and certificate
// messages of seal/), independent of this machine's endianness. One definition for all of them.
#pragma once

#include <array>
#include <concepts>
#include <cstdint>

namespace base {

template <std::unsigned_integral T>
constexpr std::array<uint8_t, sizeof(T)> big_endian(T v) {
    std::array<uint8_t, sizeof(T)> out{};
    for (size_t i = 0; i < sizeof(T); ++i) out[i] = uint8_t(v >> (8 * (sizeof(T) - 1 - i)));
    return out;
}

static_assert(big_endian(uint32_t{0x01020304}) == std::array<uint8_t, 4>{1, 2, 3, 4});

}  // namespace base
