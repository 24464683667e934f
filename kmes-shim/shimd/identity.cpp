#include "identity.hpp"

#include <cstring>
#include <string_view>

#include "base/fnv1a.hpp"

namespace kmes::shim {
namespace {

uint64_t fnv1a(uint64_t seed, std::string_view domain, const uint8_t* data, size_t len) {
    return fnv1a64(fnv1a64(seed, domain), std::string_view(reinterpret_cast<const char*>(data), len));
}

Guid derive(std::string_view domain, const uint8_t* data, size_t len) {
    const uint64_t hi = fnv1a(kFnv1aOffsetBasis, domain, data, len);
    const uint64_t lo = fnv1a(kFnv1aSecondBasis, domain, data, len);
    Guid g;
    std::memcpy(g.data(), &hi, 8);
    std::memcpy(g.data() + 8, &lo, 8);
    g[6] = static_cast<uint8_t>((g[6] & 0x0f) | 0x80);  // version 8
    g[8] = static_cast<uint8_t>((g[8] & 0x3f) | 0x80);  // RFC 9562 variant
    return g;
}

}  // namespace

Guid token_guid(uint32_t uid) { return derive("kmes.token", reinterpret_cast<const uint8_t*>(&uid), sizeof uid); }

Identity identity_of(const PeerCredentials& peer, const std::array<uint8_t, 16>& boot_id) {
    uint8_t process_key[16 + 4 + 8];
    const uint32_t pid = static_cast<uint32_t>(peer.pid);
    std::memcpy(process_key, boot_id.data(), 16);
    std::memcpy(process_key + 16, &pid, 4);
    std::memcpy(process_key + 20, &peer.start_time, 8);
    return Identity{token_guid(peer.euid), token_guid(peer.ruid),
                    derive("kmes.process", process_key, sizeof process_key)};
}

}  // namespace kmes::shim
