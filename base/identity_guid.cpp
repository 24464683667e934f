#include "base/identity_guid.hpp"

#include <cstring>

#include "base/fnv1a.hpp"

namespace base {
namespace {

uint64_t fnv1a(uint64_t seed, std::string_view domain, std::span<const uint8_t> bytes) {
    return fnv1a64(fnv1a64(seed, domain), std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

}  // namespace

std::array<uint8_t, 16> derive_guid(std::string_view domain, std::span<const uint8_t> bytes) {
    const uint64_t hi = fnv1a(kFnv1aOffsetBasis, domain, bytes);
    const uint64_t lo = fnv1a(kFnv1aSecondBasis, domain, bytes);
    std::array<uint8_t, 16> g;
    std::memcpy(g.data(), &hi, 8);
    std::memcpy(g.data() + 8, &lo, 8);
    g[6] = static_cast<uint8_t>((g[6] & 0x0f) | 0x80);  // version 8
    g[8] = static_cast<uint8_t>((g[8] & 0x3f) | 0x80);  // RFC 9562 variant
    return g;
}

std::array<uint8_t, 16> token_guid(uint32_t uid) {
    uint8_t bytes[sizeof uid];
    std::memcpy(bytes, &uid, sizeof uid);
    return derive_guid("kmes.token", bytes);
}

}  // namespace base
