// Emission for the eventd benchmarks through the real socket path (libkmes → kmes-shimd):
// one thread per ring, pinned to that CPU so libkmes (which picks the ring from
// sched_getcpu(), as the kernel would) writes ring i from thread i.
//
//   fill_rings    N events per ring as fast as possible (kmes_emit_batch of 256), to build a
//                 backlog for eventd to drain
//   PacedEmitter  a steady offered rate per ring: every millisecond (or every event, below
//                 1000/s) the thread emits what the schedule says is due, in batches of ≤ 256
//                 sharing one shim timestamp; it catches up after a late wake-up, so the
//                 average rate holds even when single ticks slip
#pragma once

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "kmes/kmes.h"

namespace bench {

inline void pin_to_cpu(uint32_t cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0)
        throw std::runtime_error("cannot pin a thread to CPU " + std::to_string(cpu));
}

// A 64-byte msgpack payload, {"data": <bin 56>}, as in the socket-emission benchmark.
inline std::vector<uint8_t> payload_64() {
    std::vector<uint8_t> p(64, 0x5a);
    const uint8_t head[] = {0x81, 0xa4, 'd', 'a', 't', 'a', 0xc4, 56};
    std::copy(std::begin(head), std::end(head), p.begin());
    return p;
}

// Emit `count` events of `type` into each of rings 0..cpus-1. Throws on an emit error.
inline void fill_rings(uint32_t cpus, uint64_t count, const std::string& type, const std::vector<uint8_t>& payload) {
    std::vector<std::thread> threads;
    std::atomic<int> failed{0};
    for (uint32_t cpu = 0; cpu < cpus; ++cpu)
        threads.emplace_back([&, cpu] {
            pin_to_cpu(cpu);
            std::vector<kmes_emit_entry> entries(
                KMES_MAX_BATCH,
                kmes_emit_entry{type.data(), uint16_t(type.size()), payload.data(), uint32_t(payload.size())});
            for (uint64_t done = 0; done < count;) {
                uint32_t out = 0;
                const auto n = uint32_t(std::min<uint64_t>(KMES_MAX_BATCH, count - done));
                if (kmes_emit_batch(entries.data(), n, &out) != 0) {
                    failed = errno;
                    return;
                }
                done += out;
            }
        });
    for (auto& t : threads) t.join();
    if (failed) throw std::runtime_error(std::string("filling the rings: kmes_emit_batch: ") + std::strerror(failed));
}

class PacedEmitter {
public:
    PacedEmitter(uint32_t cpus, double rate_per_cpu, std::string type, std::vector<uint8_t> payload)
        : cpus_(cpus), rate_(rate_per_cpu), type_(std::move(type)), payload_(std::move(payload)) {}
    ~PacedEmitter() { stop(); }

    void start() {
        start_ = std::chrono::steady_clock::now();
        for (uint32_t cpu = 0; cpu < cpus_; ++cpu) threads_.emplace_back([this, cpu] { run(cpu); });
    }
    void stop() {
        if (stop_.exchange(true)) return;
        end_ = std::chrono::steady_clock::now();
        for (auto& t : threads_)
            if (t.joinable()) t.join();
    }
    uint64_t emitted() const { return emitted_.load(); }
    uint64_t errors() const { return errors_.load(); }
    double seconds() const { return std::chrono::duration<double>(end_ - start_).count(); }

private:
    void run(uint32_t cpu) {
        pin_to_cpu(cpu);
        using Clock = std::chrono::steady_clock;
        std::vector<kmes_emit_entry> entries(
            KMES_MAX_BATCH,
            kmes_emit_entry{type_.data(), uint16_t(type_.size()), payload_.data(), uint32_t(payload_.size())});
        const auto tick =
            rate_ >= 1000 ? std::chrono::duration<double>(1e-3) : std::chrono::duration<double>(1.0 / rate_);
        uint64_t done = 0;
        auto next = start_;
        while (!stop_.load(std::memory_order_relaxed)) {
            const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
            const auto due = uint64_t(elapsed * rate_);
            while (done < due) {
                uint32_t out = 0;
                const auto n = uint32_t(std::min<uint64_t>(KMES_MAX_BATCH, due - done));
                if (kmes_emit_batch(entries.data(), n, &out) != 0) {
                    errors_.fetch_add(1);
                    std::this_thread::sleep_for(std::chrono::milliseconds(1));
                    break;
                }
                done += out;
                emitted_.fetch_add(out, std::memory_order_relaxed);
            }
            next += std::chrono::duration_cast<Clock::duration>(tick);
            std::this_thread::sleep_until(next);
        }
    }

    uint32_t cpus_;
    double rate_;
    std::string type_;
    std::vector<uint8_t> payload_;
    std::vector<std::thread> threads_;
    std::atomic<bool> stop_{false};
    std::atomic<uint64_t> emitted_{0};
    std::atomic<uint64_t> errors_{0};
    std::chrono::steady_clock::time_point start_, end_;
};

}  // namespace bench
