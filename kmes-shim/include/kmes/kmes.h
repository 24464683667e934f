/*
 * <kmes/kmes.h> — the KMES ring-buffer ABI and the libkmes C API.
 *
 * This header is what outside programs compile against: every constant, offset and
 * struct layout here is part of the ABI of PSD-003 KMES v0.20 (per-CPU attach of v0.22
 * §4.1.4), as adapted to Linux by DESIGN.md §2. Change nothing here without a version bump.
 *
 * Mapped region of one CPU's ring (PSD-003 §5.1.5), as returned by kmes_map():
 *
 *   offset 0          4096              8192                8192+cap           8192+2cap
 *   +-----------------+-----------------+-------------------+------------------+
 *   | producer page   | consumer page   | data [0, cap)     | data [0, cap)    |
 *   | read-only       | read-write      | read-only         | same pages again |
 *   +-----------------+-----------------+-------------------+------------------+
 *
 * Producer metadata page (§5.1.6), one 64-byte cache line per update frequency:
 *
 *   0   magic "KMESRING" [8]   8  version u32   12 cpu_id u16   14 reserved0 u16
 *   16  capacity u64           24 data_offset u64 (=8192)       32 generation u64
 *   40  reserved1 [24]                                           -- line 0: static
 *   64  write_pos u64          72 tail_pos u64   80 reserved2 [48] -- line 1: producer
 *   128 futex_counter u32      132 reserved3 [60]                -- line 2: notification
 *
 * Consumer metadata page (§5.1.7): 4096 need_wake u8, then reserved. One page per CPU,
 * shared by every consumer of that CPU (DESIGN.md §8).
 *
 * Event header (§2.1.2), packed, little-endian, followed by the identity stamps of this
 * implementation (DESIGN.md §2; header_size grows by 48) and then the msgpack payload:
 *
 *   0  event_size u32   4  header_size u32   8  timestamp u64 (CLOCK_REALTIME ns)
 *   16 sequence u64     24 cpu_id u16        26 origin_class u8   27 type_len u16
 *   29 type [type_len]
 *   29+type_len        effective token GUID [16]   (null for kernel emitters but audit events)
 *   45+type_len        true token GUID [16]
 *   61+type_len        process GUID [16]
 *   header_size        payload [event_size - header_size]  (msgpack)
 *
 * Consumers MUST locate the payload by header_size, never by the end of the type.
 */
#ifndef KMES_KMES_H
#define KMES_KMES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* §8.1 constants */
#define KMES_RING_MAGIC "KMESRING"
#define KMES_RING_MAGIC_LEN 8
#define KMES_RING_VERSION 1u
#define KMES_PAGE_SIZE 4096u
#define KMES_DATA_OFFSET 8192u
#define KMES_MAX_BATCH 256u
#define KMES_MAP_SIZE(capacity) ((size_t)KMES_DATA_OFFSET + 2u * (size_t)(capacity))

/* Producer metadata page offsets (§5.1.6) */
#define KMES_OFF_MAGIC 0u
#define KMES_OFF_VERSION 8u
#define KMES_OFF_CPU_ID 12u
#define KMES_OFF_RESERVED0 14u
#define KMES_OFF_CAPACITY 16u
#define KMES_OFF_DATA_OFFSET 24u
#define KMES_OFF_GENERATION 32u
#define KMES_OFF_RESERVED1 40u
#define KMES_OFF_WRITE_POS 64u
#define KMES_OFF_TAIL_POS 72u
#define KMES_OFF_RESERVED2 80u
#define KMES_OFF_FUTEX_COUNTER 128u
#define KMES_OFF_RESERVED3 132u
/* Consumer metadata page (§5.1.7), offset within the mapped region */
#define KMES_OFF_NEED_WAKE 4096u

/* Event header offsets (§2.1.2) */
#define KMES_HDR_EVENT_SIZE 0u
#define KMES_HDR_HEADER_SIZE 4u
#define KMES_HDR_TIMESTAMP 8u
#define KMES_HDR_SEQUENCE 16u
#define KMES_HDR_CPU_ID 24u
#define KMES_HDR_ORIGIN_CLASS 26u
#define KMES_HDR_TYPE_LEN 27u
#define KMES_HDR_TYPE 29u
#define KMES_BASE_HEADER_SIZE 29u
/* Identity stamps (DESIGN.md §2): three GUIDs between type and payload. */
#define KMES_GUID_SIZE 16u
#define KMES_IDENTITY_SIZE 48u
#define KMES_IDENTITY_EFFECTIVE_TOKEN 0u /* offsets relative to 29 + type_len */
#define KMES_IDENTITY_TRUE_TOKEN 16u
#define KMES_IDENTITY_PROCESS 32u

/* Origin classes (§2.1.5) */
#define KMES_ORIGIN_USERSPACE 0u
#define KMES_ORIGIN_KMES 1u
#define KMES_ORIGIN_KACS 2u
#define KMES_ORIGIN_LCS 3u
/* Linux: the kernel's audit subsystem, written by kmes-shimd's audit source (4-255 are
   reserved for kernel subsystems by §2.1.5; docs/AUDIT.md) */
#define KMES_ORIGIN_AUDIT 4u

/* Configuration ranges (§6.1) */
#define KMES_DEFAULT_BUFFER_CAPACITY 4194304ull
#define KMES_MIN_BUFFER_CAPACITY 65536ull
#define KMES_MAX_BUFFER_CAPACITY 268435456ull

/* Default shim socket; overridden by $KMES_SOCKET (DESIGN.md §5). */
#define KMES_DEFAULT_SOCKET "/run/kmes/kmes.sock"

/* One entry of kmes_emit_batch (§4.1.3): natural alignment, 32 bytes on x86-64. */
struct kmes_emit_entry {
    const char* event_type;
    uint16_t event_type_len;
    const void* payload;
    uint32_t payload_len;
};

/*
 * kmes_attach — attach to one CPU's ring (v0.22 §4.1.4).
 * Returns a new fd (the attachment) and stores the ring capacity in *capacity, or -1 with
 * errno: EPERM (no attach privilege), EINVAL (cpu_id >= ring count), EFAULT (capacity
 * NULL), ENOENT/ECONNREFUSED (no shim listening), ENOMEM. Enumerate CPUs 0, 1, … until
 * EINVAL. close(fd) ends the attachment; mappings made from it stay readable.
 */
int kmes_attach(uint32_t cpu_id, uint64_t* capacity);

/*
 * kmes_map — map the ring of an attachment with the §5.1.5 layout (KMES_MAP_SIZE bytes).
 * Producer page and data are mapped read-only from read-only file descriptions, so no
 * mprotect() can make them writable; the consumer page is read-write.
 * Returns the base address, or NULL with errno (EINVAL: capacity does not match the
 * attachment's ring; EBADF: fd is not an attachment).
 */
void* kmes_map(int fd, uint64_t capacity);

/* kmes_unmap — release a mapping made by kmes_map. 0 or -1/errno. */
int kmes_unmap(void* base, uint64_t capacity);

/*
 * kmes_emit — emit one event (§4.1.2) on the ring of the CPU the calling thread runs on.
 * 0, or -1 with errno: EPERM, EAGAIN, EINVAL, EFAULT, ENOSPC, ENOMEM, or a socket errno
 * (ENOENT/ECONNREFUSED) when no shim runs.
 */
int kmes_emit(const char* type, uint16_t type_len, const void* payload, uint32_t payload_len);

/*
 * kmes_emit_batch — emit 1..256 events with one timestamp (§4.1.3). On a failing entry N
 * entries 0..N-1 are emitted, *emitted_out = N, and errno describes entry N.
 */
int kmes_emit_batch(const struct kmes_emit_entry* entries, uint32_t count, uint32_t* emitted_out);

/* kmes_boot_id — the KMES boot id of the running shim (16 random bytes per shim start). */
int kmes_boot_id(uint8_t out[16]);

#ifdef __cplusplus
}
#endif

#endif /* KMES_KMES_H */
