// The identity GUIDs of DESIGN.md §2, derived deterministically so that every program that
// knows a uid computes the same token GUID: kmes-shimd stamps events with them (emitters'
// credentials, the subjects of audit records) and eventd compares them with a caller's token
// for the `self` principal of the access policy (docs/ACCESS-CONTROL.md §5.1).
//
//   derive_guid(domain, bytes) = two FNV-1a-64 passes with different seeds over the domain and
//                                the bytes, formatted as an RFC 9562 version-8 (custom) UUID
//   token_guid(uid)            = derive_guid("kmes.token", the uid's 4 bytes in host order)
//
// The derivation is part of the stored format: changing it would make every stored token
// a stranger to its user.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

namespace base {

std::array<uint8_t, 16> derive_guid(std::string_view domain, std::span<const uint8_t> bytes);
std::array<uint8_t, 16> token_guid(uint32_t uid);

}  // namespace base
