// Rows of a shard's `events` table for tests that write a store themselves (the store tests,
// eventd's unit tests, the query fixture store): one builder, the fields a test cares about
// named, the others those of a complete KMES event.
//
//   event_row({.boot = guid(0xb0), .timestamp = 1009, .cpu = 1, .sequence = 9})
//   event_row({.timestamp = 5, .cpu = {}, .sequence = {}, .origin_class = {}, .type = "synthetic.startup",
//              .effective_token = {}, .true_token = {}, .process = {}, .payload = {}})  // a synthetic row
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kmes/guid.hpp"
#include "store/event_row.hpp"

namespace test_support {

// A GUID of 16 equal bytes.
kmes::Guid guid(uint8_t fill);

// The fields of a store::EventRow (store/event_row.hpp), in its order (designated initializers
// follow it), with the values of a complete KMES event: every header field, the three identity
// GUIDs, an empty msgpack map as payload. `{}` (std::nullopt) makes an optional column NULL, as
// in a synthetic row.
struct RowSpec {
    kmes::Guid boot{};
    uint64_t timestamp = 0;
    std::optional<uint16_t> cpu = 0;
    std::optional<uint64_t> sequence = 1;
    std::optional<uint8_t> origin_class = 0;
    std::string type = "test.event";
    std::optional<kmes::Guid> effective_token = guid(0xe1);
    std::optional<kmes::Guid> true_token = guid(0x71);
    std::optional<kmes::Guid> process = guid(0x9a);
    std::optional<std::vector<uint8_t>> payload = std::vector<uint8_t>{0x80};  // msgpack {}
};

eventd::store::EventRow event_row(RowSpec spec);

}  // namespace test_support
