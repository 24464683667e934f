// Identity stamps (DESIGN.md §2): three GUIDs per syscall event, derived deterministically so
// a consumer can recognise the same principal and process across events:
//   effective token GUID = derive("kmes.token", euid)
//   true token GUID      = derive("kmes.token", real uid)
//   process GUID         = derive("kmes.process", KMES boot id, pid, process start time)
// derive_guid and token_guid live in base/identity_guid.hpp, shared with eventd (the `self`
// principal). Kernel emitters carry null GUIDs, except the audit source (shim_audit.cpp): the
// tokens of an audit event's subject, and its process GUID while that process still runs.
#pragma once

#include <array>
#include <cstdint>

#include "base/identity_guid.hpp"
#include "peer.hpp"
#include "producer_ring.hpp"

namespace kmes::shim {

Identity identity_of(const PeerCredentials& peer, const std::array<uint8_t, 16>& boot_id);
// The process GUID of the process `pid` that started at `start_time` (/proc/<pid>/stat field 22).
Guid process_guid(const std::array<uint8_t, 16>& boot_id, pid_t pid, uint64_t start_time);

}  // namespace kmes::shim
