// The libkmes ↔ kmes-shimd socket protocol (DESIGN.md §2; docs/PROTOCOL-KMES.md).
//
// Transport: AF_UNIX SOCK_SEQPACKET. Every request is one *message* made of one or more
// packets of at most kMaxPacket bytes; the first packet starts with a RequestHeader whose
// total_len counts the whole message. Every reply is a single packet: a Reply, plus file
// descriptors (SCM_RIGHTS) for MAP.
//
//   RequestHeader (24 bytes)
//   +--------+--------+--------+--------+------------------+
//   | magic  | op     | cpu    | count  | total_len        |
//   | u32    | u32    | u32    | u32    | u64              |
//   +--------+--------+--------+--------+------------------+
//   EMIT / EMIT_BATCH body: count × WireEntry {u16 type_len, u16 0, u32 payload_len},
//   then for each entry its type bytes followed by its payload bytes.
//   ATTACH: cpu = requested ring. MAP: count = 0, total_len = 32, cpu = 0,
//   and the capacity the caller expects in the body as one u64.
//
//   Reply (40 bytes): i32 error (0 or errno), u32 emitted, u64 capacity, u8 boot_id[16],
//   u64 generation.
#pragma once

#include <cstdint>

namespace kmes::wire {

inline constexpr uint32_t kMagic = 0x4b4d4553;  // "KMES"
inline constexpr uint32_t kMaxPacket = 65536;

enum class Op : uint32_t {
    attach = 1,      // the connection becomes the attachment of ring `cpu`
    map = 2,         // on an attachment: reply carries 3 fds (producer RO, consumer RW, data RO)
    emit = 3,        // one event, kmes_emit semantics
    emit_batch = 4,  // 1..256 events, kmes_emit_batch semantics
    boot_id = 5,     // reply carries the KMES boot id
};

struct RequestHeader {
    uint32_t magic;
    uint32_t op;
    uint32_t cpu;    // ATTACH: ring index; EMIT*: sched_getcpu() of the calling thread
    uint32_t count;  // EMIT*: number of entries
    uint64_t total_len;
};
static_assert(sizeof(RequestHeader) == 24);

struct WireEntry {
    uint16_t type_len;
    uint16_t reserved;
    uint32_t payload_len;
};
static_assert(sizeof(WireEntry) == 8);
// Bit in WireEntry::reserved: the caller's memory for this entry was inaccessible; the shim
// stops at the first such entry with EFAULT (§4.1.3 step 8). Such entries carry no bytes.
// libkmes also sets it on an entry larger than any MaxEventSize allows (and on later ones):
// the shim rejects that entry on its lengths (EINVAL/ENOSPC) before it checks this bit.
inline constexpr uint16_t kEntryFault = 1;

struct Reply {
    int32_t error;
    uint32_t emitted;
    uint64_t capacity;
    uint8_t boot_id[16];
    uint64_t generation;
};
static_assert(sizeof(Reply) == 40);

// Order of the fds that travel with a MAP reply.
inline constexpr int kProducerFd = 0;
inline constexpr int kConsumerFd = 1;
inline constexpr int kDataFd = 2;
inline constexpr int kMapFdCount = 3;

}  // namespace kmes::wire
