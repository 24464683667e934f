#include "row_chain.hpp"

#include <sodium.h>

#include <charconv>
#include <cstring>

#include "base/hex.hpp"

namespace eventd::store {
namespace {

constexpr std::string_view kOriginDomain = "eventd chain v1";

// Big-endian appends into a fixed buffer: the canonical bytes are defined byte by byte
// (docs/STORE.md), independent of this machine's endianness.
class Bytes {
public:
    void u8(uint8_t v) { buf_[n_++] = v; }
    void u16(uint16_t v) {
        u8(uint8_t(v >> 8));
        u8(uint8_t(v));
    }
    void u32(uint32_t v) {
        for (int s = 24; s >= 0; s -= 8) u8(uint8_t(v >> s));
    }
    void u64(uint64_t v) {
        for (int s = 56; s >= 0; s -= 8) u8(uint8_t(v >> s));
    }
    void raw(std::span<const uint8_t> b) {
        std::memcpy(buf_.data() + n_, b.data(), b.size());
        n_ += b.size();
    }
    std::span<const uint8_t> bytes() const { return {buf_.data(), n_}; }

private:
    std::array<uint8_t, 128> buf_{};  // the fixed-size part of a row: at most 8+16+8+3+9+2+4 + 3×17
    size_t n_ = 0;
};

// Everything of a row but its event_type's and payload's bytes, which are hashed in place.
struct Canonical {
    Bytes fixed;        // id … event_type length
    Bytes identities;   // the three GUID columns
    Bytes payload_head; // the payload's presence and length
};

template <class Guid>
void optional_guid(Bytes& b, const std::optional<Guid>& guid) {
    if (!guid) return b.u8(0);
    b.u8(1);
    b.raw(std::span<const uint8_t>(guid->data(), guid->size()));
}

ChainHead hash(const ChainHead& previous, const Canonical& c, std::string_view event_type,
               const std::optional<std::span<const uint8_t>>& payload) {
    crypto_generichash_blake2b_state state;
    crypto_generichash_blake2b_init(&state, nullptr, 0, crypto_generichash_blake2b_BYTES);
    crypto_generichash_blake2b_update(&state, previous.data(), previous.size());
    crypto_generichash_blake2b_update(&state, c.fixed.bytes().data(), c.fixed.bytes().size());
    crypto_generichash_blake2b_update(&state, reinterpret_cast<const uint8_t*>(event_type.data()), event_type.size());
    crypto_generichash_blake2b_update(&state, c.identities.bytes().data(), c.identities.bytes().size());
    crypto_generichash_blake2b_update(&state, c.payload_head.bytes().data(), c.payload_head.bytes().size());
    if (payload && !payload->empty()) crypto_generichash_blake2b_update(&state, payload->data(), payload->size());
    ChainHead out;
    crypto_generichash_blake2b_final(&state, out.data(), out.size());
    return out;
}

void header(Canonical& c, int64_t id, std::span<const uint8_t> boot_id, uint64_t timestamp,
            std::optional<uint16_t> cpu_id, std::optional<uint64_t> sequence, std::optional<uint8_t> origin_class,
            std::string_view event_type, const std::optional<std::span<const uint8_t>>& payload) {
    c.fixed.u64(uint64_t(id));
    // A boot id of another length (only a tampered row has one) is hashed as it is, with its
    // length, so that it cannot collide with a valid one.
    if (boot_id.size() == 16) {
        c.fixed.raw(boot_id);
    } else {
        c.fixed.u8(0xff);
        c.fixed.u32(uint32_t(boot_id.size()));
    }
    c.fixed.u64(timestamp);
    if (cpu_id) {
        c.fixed.u8(1);
        c.fixed.u16(*cpu_id);
    } else {
        c.fixed.u8(0);
    }
    if (sequence) {
        c.fixed.u8(1);
        c.fixed.u64(*sequence);
    } else {
        c.fixed.u8(0);
    }
    if (origin_class) {
        c.fixed.u8(1);
        c.fixed.u8(*origin_class);
    } else {
        c.fixed.u8(0);
    }
    c.fixed.u32(uint32_t(event_type.size()));
    if (payload) {
        c.payload_head.u8(1);
        c.payload_head.u32(uint32_t(payload->size()));
    } else {
        c.payload_head.u8(0);
    }
}

}  // namespace

ChainHead chain_origin(const FileId& file_id, int64_t origin_id) {
    Bytes b;
    b.raw(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(kOriginDomain.data()), kOriginDomain.size()));
    b.raw(file_id);
    b.u64(uint64_t(origin_id));
    ChainHead out;
    crypto_generichash_blake2b(out.data(), out.size(), b.bytes().data(), b.bytes().size(), nullptr, 0);
    return out;
}

ChainHead chain_next(const ChainHead& previous, const StoredRow& row) {
    Canonical c;
    header(c, row.id, row.boot_id, row.timestamp, row.cpu_id, row.sequence, row.origin_class, row.event_type,
           row.payload);
    // A GUID column of another length than 16 (tampered) is hashed with a marker and its length.
    for (const auto& guid : {row.effective_token, row.true_token, row.process}) {
        if (!guid) {
            c.identities.u8(0);
        } else if (guid->size() == 16) {
            c.identities.u8(1);
            c.identities.raw(*guid);
        } else {
            c.identities.u8(0xff);
            c.identities.u32(uint32_t(guid->size()));
        }
    }
    return hash(previous, c, row.event_type, row.payload);
}

ChainHead chain_next(const ChainHead& previous, int64_t id, const EventRow& row) {
    Canonical c;
    std::optional<std::span<const uint8_t>> payload;
    if (row.payload) payload = std::span<const uint8_t>(*row.payload);
    header(c, id, row.boot_id, row.timestamp, row.cpu_id, row.sequence, row.origin_class, row.event_type, payload);
    optional_guid(c.identities, row.effective_token);
    optional_guid(c.identities, row.true_token);
    optional_guid(c.identities, row.process);
    return hash(previous, c, row.event_type, payload);
}

int64_t chain_link(const ChainHead& head) {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = v << 8 | head[i];
    return static_cast<int64_t>(v);
}

std::string chain_hex(std::span<const uint8_t> bytes) { return base::hex_text(bytes); }

std::optional<ChainHead> chain_from_hex(std::string_view hex) {
    ChainHead out;
    if (!base::hex_bytes(hex, out)) return std::nullopt;
    return out;
}

std::string chain_point_text(const ChainPoint& point) {
    return std::to_string(point.id) + ":" + chain_hex(point.head);
}

std::optional<ChainPoint> parse_chain_point(std::string_view text) {
    const size_t colon = text.find(':');
    if (colon == std::string_view::npos || colon == 0) return std::nullopt;
    ChainPoint point;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + colon, point.id);
    if (ec != std::errc() || end != text.data() + colon || point.id < 0) return std::nullopt;
    auto head = chain_from_hex(text.substr(colon + 1));
    if (!head) return std::nullopt;
    point.head = *head;
    return point;
}

}  // namespace eventd::store
