// libkmes-internal form of kmes_attach that also returns the ring's live generation (the
// generation the shim created it with), so RingMapping can tell a retired ring exactly.
#pragma once

#include <cstdint>

namespace kmes::detail {

// As kmes_attach(); *live_generation receives the attached ring's creation generation.
int attach_ring(uint32_t cpu_id, uint64_t* capacity, uint64_t* live_generation);

}  // namespace kmes::detail
