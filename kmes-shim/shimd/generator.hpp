// Built-in kernel emitters (DESIGN.md §2): trusted in-process writers, one thread per CPU,
// for demos and benchmarks. They use RingSet::write like every other path, no socket.
#pragma once

#include <atomic>
#include <thread>
#include <vector>

#include "config.hpp"
#include "ring_set.hpp"

namespace kmes::shim {

class Generator {
public:
    Generator(RingSet& rings, GeneratorSpec spec);
    ~Generator();  // stops and joins
    void stop();
    uint64_t emitted() const { return emitted_.load(std::memory_order_relaxed); }

private:
    void run(uint32_t cpu);

    RingSet& rings_;
    GeneratorSpec spec_;
    std::atomic<bool> stop_{false};
    std::atomic<uint64_t> emitted_{0};
    std::vector<std::thread> threads_;
};

}  // namespace kmes::shim
