// The signed messages of seal/ (an epoch certificate, a checkpoint) are defined byte by byte,
// big-endian (docs/STORE.md §8): these appends build them, one definition for both.
#pragma once

#include <cstdint>
#include <vector>

namespace eventd::seal {

inline void put_u64(std::vector<uint8_t>& out, uint64_t v) {
    for (int s = 56; s >= 0; s -= 8) out.push_back(uint8_t(v >> s));
}
inline void put_u32(std::vector<uint8_t>& out, uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) out.push_back(uint8_t(v >> s));
}

}  // namespace eventd::seal
