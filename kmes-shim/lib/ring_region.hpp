// Builds the one contiguous §5.1.5 region from a ring's three memfds. Used by consumers
// (kmes_map: producer page and data read-only) and by the shim itself (all writable), so both
// sides see exactly the same layout.
#pragma once

#include <cstdint>

#include "base/result.hpp"
#include "ring_layout.hpp"

namespace kmes::detail {

enum class MapAccess { consumer, producer };

// Reserve 8192 + 2·capacity bytes of address space and map into it: producer page at 0,
// consumer page at 4096, data at 8192 and again at 8192 + capacity (§5.1.4 double mapping).
base::Result<uint8_t*> map_ring_region(int producer_fd, int consumer_fd, int data_fd, uint64_t capacity, MapAccess access);
int unmap_ring_region(void* base, uint64_t capacity);

inline RingView view_of(uint8_t* base, uint64_t capacity) {
    return RingView{base, base + KMES_PAGE_SIZE, base + KMES_DATA_OFFSET, capacity};
}

}  // namespace kmes::detail
