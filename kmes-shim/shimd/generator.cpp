#include "generator.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <string>

#include "base/thread_boundary.hpp"

namespace kmes::shim {
namespace {

// Generator payloads are exactly `size` bytes of msgpack. From 20 bytes on they are a map
// {"n": <u64 counter>, "pad": "xxx…"} so a person watching `kmes-tail` sees something that
// counts; smaller sizes fall back to a str of filler (or nil for size 1).
class PayloadMaker {
public:
    explicit PayloadMaker(uint32_t size) : size_(size) {
        if (size_ < kMapOverhead + 1) {
            bytes_ = filler_str(size_);
            return;
        }
        const uint32_t pad_total = size_ - kMapOverhead;  // str header + filler
        bytes_ = {0x82, 0xa1, 'n', 0xcf, 0, 0, 0, 0, 0, 0, 0, 0, 0xa3, 'p', 'a', 'd'};
        const std::vector<uint8_t> pad = filler_str(pad_total);
        bytes_.insert(bytes_.end(), pad.begin(), pad.end());
    }
    // Payload for the event with counter value `n`, written into `out`.
    void make(uint64_t n, std::vector<uint8_t>& out) const {
        out = bytes_;
        if (size_ >= kMapOverhead + 1)
            for (int i = 0; i < 8; ++i) out[4 + i] = static_cast<uint8_t>(n >> (56 - 8 * i));  // big-endian
    }

private:
    static constexpr uint32_t kMapOverhead = 16;  // 0x82, "n", uint64, "pad"
    // A msgpack str of exactly `total` bytes including its header.
    static std::vector<uint8_t> filler_str(uint32_t total) {
        if (total == 0) return {};
        if (total == 1) return {0xa0};  // ""
        std::vector<uint8_t> out;
        if (total - 1 <= 31)
            out = {static_cast<uint8_t>(0xa0 | (total - 1))};
        else if (total - 2 <= 0xff)
            out = {0xd9, static_cast<uint8_t>(total - 2)};
        else if (total - 3 <= 0xffff)
            out = {0xda, static_cast<uint8_t>((total - 3) >> 8), static_cast<uint8_t>(total - 3)};
        else {
            const uint32_t len = total - 5;
            out = {0xdb, uint8_t(len >> 24), uint8_t(len >> 16), uint8_t(len >> 8), uint8_t(len)};
        }
        out.resize(total, 'x');
        return out;
    }
    uint32_t size_;
    std::vector<uint8_t> bytes_;
};

}  // namespace

Generator::Generator(RingSet& rings, GeneratorSpec spec) : rings_(rings), spec_(std::move(spec)) {
    // An unexpected error stops this CPU's generator only (a test-load feature; logged).
    for (uint32_t cpu = 0; cpu < rings_.cpu_count(); ++cpu)
        threads_.emplace_back([this, cpu] {
            base::run_guarded("built-in emitter", [this, cpu] { run(cpu); }, [](const std::string&) {});
        });
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
    const PayloadMaker maker(spec_.payload_size);

    // Rate: events are written in small batches on a fixed tick; unlimited writes 256-batches.
    const uint32_t batch =
        spec_.rate == 0 ? 256 : static_cast<uint32_t>(std::clamp<uint64_t>(spec_.rate / 100, 1, 256));
    const auto tick =
        spec_.rate == 0
            ? Clock::duration::zero()
            : std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(double(batch) / spec_.rate));
    std::vector<EventInput> events(batch);
    std::vector<std::vector<uint8_t>> payloads(batch);
    uint64_t counter = 0;
    auto next = Clock::now();
    const Identity kernel{};  // kernel emitters carry null identity GUIDs
    while (!stop_.load(std::memory_order_relaxed)) {
        // count=N: the last batch is cut to what is left, then this CPU's thread ends.
        if (spec_.count != 0) {
            if (counter == spec_.count) break;
            events.resize(std::min<uint64_t>(batch, spec_.count - counter));
        }
        for (uint32_t i = 0; i < events.size(); ++i) {
            maker.make(++counter, payloads[i]);
            events[i] = EventInput{types[pick(rng)], payloads[i]};
        }
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
