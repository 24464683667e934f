// In-process harness for the ring protocol tests: the real producer (kmes::shim::RingSet /
// ProducerRing) and the real consumer (kmes::RingReader) in one process. A consumer mapping
// is built from the producer's consumer-side memfds exactly as kmes_map() builds it, so the
// reader sees read-only producer page and data, and a writable consumer page.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "kmes/ring_reader.hpp"
#include "base/sync_point.hpp"
#include "lib/ring_layout.hpp"
#include "lib/ring_region.hpp"
#include "shimd/producer_ring.hpp"
#include "shimd/ring_set.hpp"

namespace kmes::test {

inline constexpr uint64_t kSmallRing = 65536;  // KMES_MIN_BUFFER_CAPACITY
inline const std::vector<uint8_t> kNilPayload = {0xc0};  // the smallest valid payload: msgpack nil
inline constexpr std::string_view kType = "test.event";
// What RingSet writes: base header + type + identity stamps (DESIGN.md §2).
inline constexpr uint32_t kHeaderSize = KMES_BASE_HEADER_SIZE + kType.size() + KMES_IDENTITY_SIZE;

// kmes_map() of a producer ring, without the socket: the consumer's view of it.
inline base::Result<RingMapping> map_consumer(const shim::ProducerRing& ring) {
    auto base = detail::map_ring_region(ring.consumer_producer_fd(), ring.consumer_page_fd(), ring.consumer_data_fd(),
                                        ring.capacity(), detail::MapAccess::consumer);
    if (!base) return base.error();
    return RingMapping(-1, *base, ring.capacity(), /*owns_mapping=*/true, ring.created_generation());
}

// Reader options whose re-attach (after a resize) maps the RingSet's current ring of the CPU.
inline ReaderOptions attached_to(shim::RingSet& set, ReaderOptions options = {}) {
    options.reattach = [&set](uint32_t cpu) { return map_consumer(*set.ring(cpu)); };
    return options;
}

inline std::unique_ptr<shim::RingSet> make_ring_set(uint64_t capacity, uint32_t cpus = 1) {
    auto set = shim::RingSet::create(cpus, capacity, shim::RingOptions{});
    if (!set) {
        std::fprintf(stderr, "RingSet::create(%u, %llu): %s\n", cpus, static_cast<unsigned long long>(capacity),
                     set.error().message.c_str());
        std::abort();
    }
    return std::move(*set);
}

// A reader of `cpu` of `set`, positioned at tail_pos (or at the end), re-attaching through `set`.
inline RingReader reader_of(shim::RingSet& set, uint32_t cpu, ReaderOptions options = {}) {
    auto mapping = map_consumer(*set.ring(cpu));
    if (!mapping) {
        std::fprintf(stderr, "map consumer ring %u: %s\n", cpu, mapping.error().message.c_str());
        std::abort();
    }
    return RingReader(cpu, std::move(*mapping), attached_to(set, std::move(options)));
}

// ---- self-checking payloads ----------------------------------------------------------------
//
// Payload of the event with sequence `token`: [u64 token][u64 word k = mix(token, k) …], its
// length also derived from the token. A reader recomputes all of it from the header's
// sequence, so a header from one write with bytes of another, a torn copy or a wrong length
// is caught. (Raw bytes, not msgpack: the ring itself never looks inside a payload.)

inline uint64_t mix(uint64_t x) {  // splitmix64 finaliser
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

inline size_t payload_size_for(uint64_t token, size_t min_size, size_t max_size) {
    return min_size + mix(token ^ 0x5a5a5a5aull) % (max_size - min_size + 1);
}

inline void fill_payload(uint64_t token, std::span<uint8_t> out) {
    size_t i = 0;
    for (uint64_t k = 0; i < out.size(); ++k) {
        const uint64_t word = k == 0 ? token : mix(token * 31 + k);
        const size_t n = std::min<size_t>(8, out.size() - i);
        std::memcpy(out.data() + i, &word, n);
        i += n;
    }
}

inline bool payload_intact(uint64_t token, std::span<const uint8_t> payload, size_t min_size, size_t max_size) {
    if (payload.size() != payload_size_for(token, min_size, max_size)) return false;
    uint8_t expected[4096];
    if (payload.size() > sizeof expected) return false;
    fill_payload(token, std::span<uint8_t>(expected, payload.size()));
    return std::memcmp(expected, payload.data(), payload.size()) == 0;
}

// Write one event of type kType with `payload` through the real write path.
inline uint32_t write_one(shim::RingSet& set, uint32_t cpu, std::span<const uint8_t> payload,
                          std::string_view type = kType) {
    const shim::EventInput event{type, payload};
    return set.write(cpu, KMES_ORIGIN_KACS, std::span<const shim::EventInput>(&event, 1), shim::Identity{});
}

// ---- helpers -------------------------------------------------------------------------------

#ifdef KMES_SYNC_POINTS
// Clears every sync-point callback when the test ends, pass or fail. (Only the files that need
// sync points use it; a build without them leaves those files out, tests/meson.build.)
struct SyncPointGuard {
    SyncPointGuard() { base::sync::clear_all(); }
    ~SyncPointGuard() { base::sync::clear_all(); }
};
#endif

// Run `fn` with a deadline. A protocol bug that makes the reader spin forever must fail the
// test with a message rather than hang it, so on timeout the process ends at once.
template <class Fn>
auto within(std::chrono::milliseconds deadline, const char* what, Fn&& fn) {
    auto task = std::async(std::launch::async, std::forward<Fn>(fn));
    if (task.wait_for(deadline) == std::future_status::timeout) {
        std::fprintf(stderr, "FATAL: %s did not finish within %lld ms (endless loop?)\n", what,
                     static_cast<long long>(deadline.count()));
        std::fflush(stderr);
        std::_Exit(3);
    }
    return task.get();
}

// Drain everything currently readable; returns the sequences delivered.
inline std::vector<uint64_t> drain_sequences(RingReader& reader, size_t limit = 10'000'000) {
    std::vector<uint64_t> out;
    while (out.size() < limit) {
        auto event = reader.next();
        if (!event.ok() || !event.value()) break;
        out.push_back((*event.value()).sequence());
    }
    return out;
}

inline uint64_t now_ns() {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
}

}  // namespace kmes::test
