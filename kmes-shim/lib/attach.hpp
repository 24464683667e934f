// libkmes-internal form of kmes_attach that also returns the ring's live generation (the
// generation the shim created it with), so RingMapping can tell a retired ring exactly.
#pragma once

#include <cstdint>

namespace kmes::detail {

// As kmes_attach(); *live_generation receives the attached ring's creation generation and
// boot_id (if not null) the KMES boot id of the shim that owns it.
int attach_ring(uint32_t cpu_id, uint64_t* capacity, uint64_t* live_generation, uint8_t* boot_id = nullptr);

}  // namespace kmes::detail
