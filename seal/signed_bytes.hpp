// The signed messages of seal/ (an epoch certificate, a checkpoint) are defined byte by byte,
// big-endian (docs/STORE.md §8): these appends build them, one definition for both.
#pragma once

#include <cstdint>
#include <vector>

#include "base/big_endian.hpp"

namespace eventd::seal {

inline void put_u64(std::vector<uint8_t>& out, uint64_t v) {
    const auto bytes = base::big_endian(v);
    out.insert(out.end(), bytes.begin(), bytes.end());
}
inline void put_u32(std::vector<uint8_t>& out, uint32_t v) {
    const auto bytes = base::big_endian(v);
    out.insert(out.end(), bytes.begin(), bytes.end());
}

}  // namespace eventd::seal
