#include "row_chain.hpp"

// OpenSSL's SHA256_Init/Update/Final, which 3.0 deprecates in favour of EVP: an EVP digest
// context allocates on every init in 3.0 (measured: one malloc per hash), which cost the shard
// writer about twice the hash itself (docs/PERFORMANCE.md §16). The low-level functions run
// the same code (the CPU's SHA instructions) on a context on the stack. API level 1.1.1 keeps
// them declared without deprecation warnings; they remain in every OpenSSL 3 release.
#define OPENSSL_API_COMPAT 10101
#include <openssl/sha.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/big_endian.hpp"
#include "base/hex.hpp"

namespace eventd::store {
namespace {

constexpr std::string_view kOriginDomain = "eventd chain v3";

// SHA-256 through OpenSSL, which uses the CPU's SHA instructions where there are (x86 SHA-NI,
// ARMv8 SHA2): on the EPYC of docs/PERFORMANCE.md §16 it hashes a 257-byte row 2.2× faster than
// libsodium's BLAKE2b.
class Sha256 {
public:
    Sha256() { check(SHA256_Init(&context_), "SHA256_Init"); }
    void update(const void* data, size_t size) {
        if (size) check(SHA256_Update(&context_, data, size), "SHA256_Update");
    }
    void update(std::span<const uint8_t> bytes) { update(bytes.data(), bytes.size()); }
    std::array<uint8_t, 32> final() {
        std::array<uint8_t, 32> out;
        check(SHA256_Final(out.data(), &context_), "SHA256_Final");
        return out;
    }

private:
    // They fail only on a null argument; a row written unchained would be a hole in the chain.
    static void check(int ok, const char* what) {
        if (ok == 1) return;
        std::fprintf(stderr, "eventd: %s failed: cannot hash the store's chain\n", what);
        std::abort();
    }
    SHA256_CTX context_;
};

// Appends into a fixed buffer, integers big-endian: the canonical bytes are defined byte by byte
// (docs/STORE.md).
class Bytes {
public:
    void u8(uint8_t v) { buf_[n_++] = v; }
    void u16(uint16_t v) { raw(base::big_endian(v)); }
    void u32(uint32_t v) { raw(base::big_endian(v)); }
    void u64(uint64_t v) { raw(base::big_endian(v)); }
    void raw(std::span<const uint8_t> b) {
        std::memcpy(buf_.data() + n_, b.data(), b.size());
        n_ += b.size();
    }
    std::span<const uint8_t> bytes() const { return {buf_.data(), n_}; }

private:
    std::array<uint8_t, 128> buf_;  // the fixed-size part of a row: at most 16+8+3+9+2+4 + 3×17
    size_t n_ = 0;
};

// content(row) but its event_type's and payload's bytes, which are hashed in place.
struct Content {
    Bytes fixed;        // boot_id … event_type length
    Bytes identities;   // the three GUID columns
    Bytes payload_head; // the payload's presence and length
};

template <class Guid>
void optional_guid(Bytes& b, const std::optional<Guid>& guid) {
    if (!guid) return b.u8(0);
    b.u8(1);
    b.raw(std::span<const uint8_t>(guid->data(), guid->size()));
}

RowDigest digest(const Content& c, std::string_view event_type, const std::optional<std::span<const uint8_t>>& payload) {
    Sha256 h;
    h.update(c.fixed.bytes());
    h.update(event_type.data(), event_type.size());
    h.update(c.identities.bytes());
    h.update(c.payload_head.bytes());
    if (payload) h.update(*payload);
    return h.final();
}

void header(Content& c, std::span<const uint8_t> boot_id, uint64_t timestamp, std::optional<uint16_t> cpu_id,
            std::optional<uint64_t> sequence, std::optional<uint8_t> origin_class, std::string_view event_type,
            const std::optional<std::span<const uint8_t>>& payload) {
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
    Sha256 h;
    h.update(b.bytes());
    return h.final();
}

RowDigest row_digest(const StoredRow& row) {
    Content c;
    header(c, row.boot_id, row.timestamp, row.cpu_id, row.sequence, row.origin_class, row.event_type, row.payload);
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
    return digest(c, row.event_type, row.payload);
}

RowDigest row_digest(const EventRow& row) {
    Content c;
    std::optional<std::span<const uint8_t>> payload;
    if (row.payload) payload = std::span<const uint8_t>(*row.payload);
    header(c, row.boot_id, row.timestamp, row.cpu_id, row.sequence, row.origin_class, row.event_type, payload);
    optional_guid(c.identities, row.effective_token);
    optional_guid(c.identities, row.true_token);
    optional_guid(c.identities, row.process);
    return digest(c, row.event_type, payload);
}

RowTag row_tag(const RowDigest& digest) {
    RowTag tag;
    std::memcpy(tag.data(), digest.data(), kTagBytes);
    return tag;
}

struct SegmentHasher::State {
    Sha256 hash;
};

SegmentHasher::SegmentHasher() : state_(std::make_unique<State>()) {}
SegmentHasher::~SegmentHasher() = default;

void SegmentHasher::start(const ChainHead& previous, int64_t first_id) {
    state_->hash = Sha256();
    state_->hash.update(previous);
    first_id_ = first_id;
    count_ = 0;
    open_ = true;
    tags_.clear();
}

void SegmentHasher::add(const RowDigest& digest) {
    state_->hash.update(digest);
    tags_.insert(tags_.end(), digest.begin(), digest.begin() + kTagBytes);
    ++count_;
}

ChainHead SegmentHasher::finish() {
    // The ids close the link, so that a segment moved to other ids, or cut shorter, changes it.
    Bytes ids;
    ids.u64(uint64_t(first_id_));
    ids.u64(uint64_t(last_id()));
    state_->hash.update(ids.bytes());
    open_ = false;
    return state_->hash.final();
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
