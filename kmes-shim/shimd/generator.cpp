#include "generator.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <string>

namespace kmes::shim {
namespace {

// A msgpack payload of exactly `size` bytes: bin 8/16/32 holding a counter then filler.
std::vector<uint8_t> make_payload(uint32_t size) {
    std::vector<uint8_t> out;
    if (size < 2) return {0xc0};  // nil: the smallest valid value
    uint32_t header = size - 2 <= 0xff ? 2 : size - 3 <= 0xffff ? 3 : 5;
    uint32_t len = size - header;
    if (header == 2) out = {0xc4, uint8_t(len)};
    else if (header == 3) out = {0xc5, uint8_t(len >> 8), uint8_t(len)};
    else out = {0xc6, uint8_t(len >> 24), uint8_t(len >> 16), uint8_t(len >> 8), uint8_t(len)};
    out.resize(size, 0x5a);
    return out;
}

}  // namespace

Generator::Generator(RingSet& rings, GeneratorSpec spec) : rings_(rings), spec_(std::move(spec)) {
    for (uint32_t cpu = 0; cpu < rings_.cpu_count(); ++cpu) threads_.emplace_back([this, cpu] { run(cpu); });
}

Generator::~Generator() { stop(); }

void Generator::stop() {
    stop_.store(true, std::memory_order_relaxed);
    for (auto& t : threads_)
        if (t.joinable()) t.join();
}

void Generator::run(uint32_t cpu) {
    using Clock = std::chrono::steady_clock;
    std::vector<std::string> types;
    std::vector<uint32_t> weights;
    for (const auto& [type, weight] : spec_.types) {
        types.push_back(type);
        weights.push_back(weight);
    }
    std::mt19937 rng(cpu + 1);
    std::discrete_distribution<size_t> pick(weights.begin(), weights.end());
    std::vector<uint8_t> payload = make_payload(spec_.payload_size);

    // Rate: events are written in small batches on a fixed tick; unlimited writes 256-batches.
    const uint32_t batch = spec_.rate == 0 ? 256 : static_cast<uint32_t>(std::clamp<uint64_t>(spec_.rate / 100, 1, 256));
    const auto tick = spec_.rate == 0 ? Clock::duration::zero()
                                      : std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(double(batch) / spec_.rate));
    std::vector<EventInput> events(batch);
    auto next = Clock::now();
    const Identity kernel{};  // kernel emitters carry null identity GUIDs
    while (!stop_.load(std::memory_order_relaxed)) {
        for (auto& e : events) e = EventInput{types[pick(rng)], payload};
        emitted_.fetch_add(rings_.write(cpu, spec_.origin_class, events, kernel), std::memory_order_relaxed);
        if (spec_.rate != 0) {
            next += tick;
            // Sleep in short steps so stop() never waits a whole slow tick.
            for (auto now = Clock::now(); now < next && !stop_.load(std::memory_order_relaxed); now = Clock::now())
                std::this_thread::sleep_for(std::min<Clock::duration>(next - now, std::chrono::milliseconds(20)));
        }
    }
}

}  // namespace kmes::shim
