// How kmes-tail prints events and losses: one line per event, human or JSON.
//
// Human:  2026-11-22T17:55:22.678123456Z cpu=1 seq=42 origin=0 type=demo.x {"a":1}
//         (msgpack bin values shown as "hex:0a1b…"; an undecodable payload as <undecodable msgpack: why> hex=…)
//         # cpu=1 gap: sequences 10..19 lost (10 events)
// JSON:   {"event_size":…,"header_size":…,"timestamp":…,"sequence":…,"cpu_id":…,"origin_class":…,
//          "type":"…","effective_token":"…","true_token":"…","process":"…","payload":…}
//         {"gap":{"cpu_id":1,"first_sequence":10,"last_sequence":19,"count":10}}
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "kmes/event.hpp"

namespace kmes::tools {

// CLOCK_REALTIME nanoseconds as UTC RFC 3339 with nine fraction digits.
std::string iso_timestamp(uint64_t ns);

// The payload decoded from msgpack. On failure, {"payload_error": why, "payload_hex": bytes}
// is written into `out` instead of "payload". An empty payload is null.
void add_payload(nlohmann::ordered_json& out, std::span<const uint8_t> payload);

nlohmann::ordered_json event_json(const EventView& event);
std::string event_line(const EventView& event);

// Sequences first..last of one CPU never reached this reader.
struct Gap {
    uint32_t cpu_id;
    uint64_t first_sequence;
    uint64_t last_sequence;
    uint64_t count() const { return last_sequence - first_sequence + 1; }
};
nlohmann::ordered_json gap_json(const Gap& gap);
std::string gap_line(const Gap& gap);

// One compact line; invalid UTF-8 is replaced rather than thrown on. ordered_json keeps keys in
// the order written above and payload maps in their msgpack order.
std::string dump_line(const nlohmann::ordered_json& value);

}  // namespace kmes::tools
