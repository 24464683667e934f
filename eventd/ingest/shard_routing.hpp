// Which shard(s) a CPU writes to (PSD-008 §2.3.2, DESIGN.md §8). Fixed at startup.
//   shards <  cpus: CPU i → shard i % shards (several CPUs share a shard)
//   shards >= cpus: shard j belongs to CPU j % cpus; a CPU with several shards sends its events
//                   round-robin in contiguous runs of kRunLength events, so each shard's
//                   sequence_state holds few ranges (DESIGN.md §4.3).
#pragma once

#include <cstdint>
#include <vector>

namespace eventd {

inline constexpr uint64_t kRunLength = 8192;

// shards_of[cpu] = the shard indices CPU `cpu` writes to, in round-robin order.
inline std::vector<std::vector<uint32_t>> shards_of_cpus(uint32_t cpus, uint32_t shards) {
    std::vector<std::vector<uint32_t>> out(cpus);
    if (shards < cpus) {
        for (uint32_t cpu = 0; cpu < cpus; ++cpu) out[cpu].push_back(cpu % shards);
    } else {
        for (uint32_t shard = 0; shard < shards; ++shard) out[shard % cpus].push_back(shard);
    }
    return out;
}

}  // namespace eventd
