#include "ring_capture.hpp"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include <catch2/catch.hpp>

#include "kmes/kmes.h"
#include "support/eventually.hpp"

namespace kmes::it {

nlohmann::json CapturedEvent::payload() const {
    const auto p = view().payload();
    return nlohmann::json::from_msgpack(p.begin(), p.end(), true, false);
}

std::vector<CapturedEvent> drain(kmes::RingReader& reader) {
    std::vector<CapturedEvent> events;
    for (;;) {
        auto next = reader.next();
        if (!next.ok()) FAIL("RingReader::next failed on cpu " << reader.cpu() << ": " << next.error().message);
        if (!*next) return events;
        const auto bytes = (*next)->bytes();
        events.push_back(CapturedEvent{std::vector<uint8_t>(bytes.begin(), bytes.end())});
    }
}

std::vector<CapturedEvent> capture_ring(uint32_t cpu) {
    auto reader = kmes::RingReader::open(cpu);
    if (!reader.ok()) FAIL("RingReader::open(" << cpu << "): " << reader.error().message);
    return drain(*reader);
}

std::vector<std::vector<CapturedEvent>> capture_rings(uint32_t cpus) {
    std::vector<std::vector<CapturedEvent>> rings;
    for (uint32_t cpu = 0; cpu < cpus; ++cpu) rings.push_back(capture_ring(cpu));
    return rings;
}

std::vector<CapturedEvent> all_events(uint32_t cpus) {
    std::vector<CapturedEvent> all;
    for (auto& ring : capture_rings(cpus)) all.insert(all.end(), ring.begin(), ring.end());
    return all;
}

std::vector<CapturedEvent> of_type(const std::vector<CapturedEvent>& events, const std::string& type) {
    std::vector<CapturedEvent> out;
    for (const CapturedEvent& e : events)
        if (e.type() == type) out.push_back(e);
    return out;
}

std::vector<uint64_t> sequences(const std::vector<CapturedEvent>& events) {
    std::vector<uint64_t> out;
    for (const CapturedEvent& e : events) out.push_back(e.sequence());
    return out;
}

std::vector<uint64_t> one_to(uint64_t n) {
    std::vector<uint64_t> out;
    for (uint64_t s = 1; s <= n; ++s) out.push_back(s);
    return out;
}

uint64_t ring_generation(const kmes::RingMapping& mapping) {
    // Acquire pairs with the producer's release store of generation (§5.1.9.3).
    return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(mapping.base() + KMES_OFF_GENERATION))
        .load(std::memory_order_acquire);
}

uint16_t ring_cpu_id(const kmes::RingMapping& mapping) {
    uint16_t cpu;
    std::memcpy(&cpu, mapping.base() + KMES_OFF_CPU_ID, sizeof cpu);
    return cpu;
}

kmes::RingMapping attach_ring(uint32_t cpu) {
    auto mapping = kmes::RingMapping::attach(cpu);
    if (!mapping.ok()) FAIL("attach ring " << cpu << ": " << mapping.error().message);
    return std::move(*mapping);
}

uint64_t attach_capacity(uint32_t cpu) {
    uint64_t capacity = 0;
    const int fd = kmes_attach(cpu, &capacity);
    if (fd < 0) return 0;
    close(fd);
    return capacity;
}

bool wait_for_capacity(uint32_t cpu, uint64_t capacity, std::chrono::milliseconds timeout) {
    return test_support::eventually([&] { return attach_capacity(cpu) == capacity; }, timeout,
                                    std::chrono::milliseconds(10));
}

std::vector<uint8_t> msgpack(const nlohmann::json& value) { return nlohmann::json::to_msgpack(value); }

std::vector<uint8_t> msgpack_of_size(size_t size) {
    REQUIRE(size >= 2);
    std::vector<uint8_t> out;
    if (size - 2 <= 0xff)
        out = {0xc4, uint8_t(size - 2)};
    else if (size - 3 <= 0xffff)
        out = {0xc5, uint8_t((size - 3) >> 8), uint8_t(size - 3)};
    else
        out = {0xc6, uint8_t((size - 5) >> 24), uint8_t((size - 5) >> 16), uint8_t((size - 5) >> 8), uint8_t(size - 5)};
    out.resize(size, 0x5a);
    return out;
}

std::vector<uint8_t> nested_arrays(uint32_t depth) {
    std::vector<uint8_t> out(depth, 0x91);  // fixarray of one element
    out.push_back(0x01);
    return out;
}

int emit(const std::string& type, const std::vector<uint8_t>& payload) {
    const int rc = kmes_emit(type.data(), uint16_t(type.size()), payload.data(), uint32_t(payload.size()));
    return rc == 0 ? 0 : errno;
}

int emit(const std::string& type, const nlohmann::json& payload) { return emit(type, msgpack(payload)); }

std::string errno_name(int code) {
    if (code == 0) return "0";
    const char* name = strerrorname_np(code);
    return name ? name : std::to_string(code);
}

}  // namespace kmes::it
