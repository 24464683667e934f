// EventView: read-only accessors over one event copied out of a ring (header layout drawn
// in <kmes/kmes.h>, PSD-003 §2.1.2). The bytes are owned by whoever copied them.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

#include "kmes/guid.hpp"
#include "kmes/kmes.h"

namespace kmes {

class EventView {
public:
    EventView() = default;
    explicit EventView(std::span<const uint8_t> bytes) : bytes_(bytes) {}

    std::span<const uint8_t> bytes() const { return bytes_; }
    uint32_t event_size() const { return get<uint32_t>(KMES_HDR_EVENT_SIZE); }
    uint32_t header_size() const { return get<uint32_t>(KMES_HDR_HEADER_SIZE); }
    uint64_t timestamp() const { return get<uint64_t>(KMES_HDR_TIMESTAMP); }
    uint64_t sequence() const { return get<uint64_t>(KMES_HDR_SEQUENCE); }
    uint16_t cpu_id() const { return get<uint16_t>(KMES_HDR_CPU_ID); }
    uint8_t origin_class() const { return bytes_[KMES_HDR_ORIGIN_CLASS]; }
    uint16_t type_len() const { return get<uint16_t>(KMES_HDR_TYPE_LEN); }

    // Structural sanity of a copied event: sizes consistent with each other and the copy.
    bool well_formed() const {
        return bytes_.size() >= KMES_BASE_HEADER_SIZE && event_size() == bytes_.size() &&
               header_size() <= event_size() && KMES_BASE_HEADER_SIZE + uint64_t{type_len()} <= header_size();
    }
    std::string_view type() const { return {reinterpret_cast<const char*>(bytes_.data() + KMES_HDR_TYPE), type_len()}; }
    // Identity stamps exist when the header has room for them (DESIGN.md §2).
    bool has_identity() const { return header_size() >= KMES_BASE_HEADER_SIZE + type_len() + KMES_IDENTITY_SIZE; }
    Guid effective_token() const { return guid(KMES_IDENTITY_EFFECTIVE_TOKEN); }
    Guid true_token() const { return guid(KMES_IDENTITY_TRUE_TOKEN); }
    Guid process() const { return guid(KMES_IDENTITY_PROCESS); }
    // The payload is located by header_size, never by the end of the type (§2.1.2).
    std::span<const uint8_t> payload() const { return bytes_.subspan(header_size()); }

private:
    template <class T>
    T get(size_t offset) const {
        T v;
        std::memcpy(&v, bytes_.data() + offset, sizeof v);
        return v;
    }
    Guid guid(size_t offset) const {
        Guid g{};
        if (has_identity()) std::memcpy(g.data(), bytes_.data() + KMES_BASE_HEADER_SIZE + type_len() + offset, 16);
        return g;
    }
    std::span<const uint8_t> bytes_;
};

}  // namespace kmes
