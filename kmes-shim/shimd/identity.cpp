#include "identity.hpp"

#include <cstring>

namespace kmes::shim {

Guid process_guid(const std::array<uint8_t, 16>& boot_id, pid_t pid, uint64_t start_time) {
    uint8_t process_key[16 + 4 + 8];
    const uint32_t pid32 = static_cast<uint32_t>(pid);
    std::memcpy(process_key, boot_id.data(), 16);
    std::memcpy(process_key + 16, &pid32, 4);
    std::memcpy(process_key + 20, &start_time, 8);
    return base::derive_guid("kmes.process", process_key);
}

Identity identity_of(const PeerCredentials& peer, const std::array<uint8_t, 16>& boot_id) {
    return Identity{base::token_guid(peer.euid), base::token_guid(peer.ruid), process_guid(boot_id, peer.pid, peer.start_time)};
}

}  // namespace kmes::shim
