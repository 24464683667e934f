#include "identity.hpp"

#include <cstring>

namespace kmes::shim {

Identity identity_of(const PeerCredentials& peer, const std::array<uint8_t, 16>& boot_id) {
    uint8_t process_key[16 + 4 + 8];
    const uint32_t pid = static_cast<uint32_t>(peer.pid);
    std::memcpy(process_key, boot_id.data(), 16);
    std::memcpy(process_key + 16, &pid, 4);
    std::memcpy(process_key + 20, &peer.start_time, 8);
    return Identity{token_guid(peer.euid), token_guid(peer.ruid), derive_guid("kmes.process", process_key)};
}

}  // namespace kmes::shim
