// Reading what a shim wrote, through the public consumer API only (<kmes/ring_reader.hpp>),
// and building payloads. Events are copied out so they outlive the reader.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kmes/event.hpp"
#include "kmes/ring_reader.hpp"

namespace kmes::it {

struct CapturedEvent {
    std::vector<uint8_t> bytes;
    kmes::EventView view() const { return kmes::EventView(bytes); }
    uint64_t sequence() const { return view().sequence(); }
    std::string type() const { return std::string(view().type()); }
    nlohmann::json payload() const;  // decoded msgpack
};

// Every event the reader can deliver now (until next() reports an empty ring).
std::vector<CapturedEvent> drain(kmes::RingReader& reader);
// Attach to ring `cpu` from tail_pos and drain it.
std::vector<CapturedEvent> capture_ring(uint32_t cpu);
// capture_ring for rings 0..cpus-1.
std::vector<std::vector<CapturedEvent>> capture_rings(uint32_t cpus);
std::vector<CapturedEvent> all_events(uint32_t cpus);  // every ring, concatenated
std::vector<CapturedEvent> of_type(const std::vector<CapturedEvent>& events, const std::string& type);

std::vector<uint64_t> sequences(const std::vector<CapturedEvent>& events);
std::vector<uint64_t> one_to(uint64_t n);  // {1, 2, …, n}: what a ring with no gap holds

// Producer page fields of a mapping (acquire loads where the producer updates them).
uint64_t ring_generation(const kmes::RingMapping& mapping);
uint16_t ring_cpu_id(const kmes::RingMapping& mapping);

// kmes_attach + kmes_map; REQUIREs success.
kmes::RingMapping attach_ring(uint32_t cpu);
// Capacity reported by a fresh kmes_attach (the ring in force now); 0 and errno on failure.
uint64_t attach_capacity(uint32_t cpu);
// Poll attach_capacity until it equals `capacity`; false after `timeout`.
bool wait_for_capacity(uint32_t cpu, uint64_t capacity, std::chrono::milliseconds timeout);

std::vector<uint8_t> msgpack(const nlohmann::json& value);
// A msgpack bin value of exactly `size` bytes (size ≥ 2).
std::vector<uint8_t> msgpack_of_size(size_t size);
// `depth` arrays nested inside each other around a 1: [[[1]]] is depth 3.
std::vector<uint8_t> nested_arrays(uint32_t depth);

// kmes_emit of `type` with a msgpack payload; returns 0 or the errno.
int emit(const std::string& type, const std::vector<uint8_t>& payload);
int emit(const std::string& type, const nlohmann::json& payload = nlohmann::json::object());

// Name of an errno value ("EPERM"), for readable assertions.
std::string errno_name(int code);

}  // namespace kmes::it
