// One Linux audit event → one KMES kernel event (issue 24; docs/AUDIT.md "Mapping").
//
// The kernel sends an audit event as several records sharing one serial (SYSCALL, EXECVE, CWD,
// PATH…, PROCTITLE, EOE). libauparse's feed API reassembles them (AuditAssembler) and
// interprets fields (uid → name, syscall number → name, hex-encoded strings); this file turns
// one reassembled event into what the shim writes into a ring:
//
//   event type   "audit." + the first record's type name in lower case (audit.syscall,
//                audit.user_login, audit.avc, …)
//   payload      a msgpack map:
//     serial         the audit serial
//     audit_time     the event's time, ns since the epoch (the kernel's, millisecond precision)
//     record_types   every record's type name, in order (EOE left out)
//     <field>        every field of the first record: integers as integers, quoted and hex
//                    strings as the bytes the kernel recorded (str when valid UTF-8, else
//                    bin), `syscall` as its name, `arch` interpreted, and for uid/gid fields
//                    `<field>_name` beside the number (the account's name)
//     cwd            CWD's cwd, as recorded                  (CWD)
//     paths          one map per PATH record: its fields, as the first record's (PATH)
//     proctitle      PROCTITLE, as recorded (NULs between arguments become spaces), and
//                    proctitle_truncated / proctitle_cut_bytes at the kernel's 128-byte cap
//     <type>         any other record: a map of its fields under its lower-case type name
//                    (an array of maps when the type repeats)
//     argc, argv     every EXECVE record's arguments, whole, last in the map; beyond
//                    MappingLimits (below) argv_truncated, argv_cut_args, argv_cut_bytes
//   subject      uid and euid of the first record (for the identity stamps), when present
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "msgpack/writer.hpp"

typedef struct opaque auparse_state_t;

namespace kmes::audit {

struct AuditEvent {
    std::string type;                 // "audit.syscall"
    eventd::msgpack::Bytes payload;   // the msgpack map above, as it goes into a ring
    std::optional<uint32_t> uid;      // the subject's real uid
    std::optional<uint32_t> euid;     // and effective uid
    std::optional<pid_t> pid;
    std::optional<int64_t> audit_time;  // the payload's audit_time (ns), when it has one
    uint64_t lost_records = 0;          // an audit.lost event's `records`
    uint64_t lost_events = 0;           // an audit.lost event's `events` (source serial)
    std::optional<uint64_t> serial;     // the audit serial, when the event has one
    uint32_t records = 0;               // the records it was made of (EOE left out)
};

// The event auparse's cursor is on (inside an AUPARSE_CB_EVENT_READY callback). Moves the
// record and field cursors. A syscall event without EOE or PROCTITLE was handed on by the
// timeout before its end came: its payload says `"incomplete": true`.
// Limits of the mapping (kmes.json Audit.ArgvMaxBytes; docs/AUDIT.md "Arguments").
inline constexpr uint64_t kDefaultArgvMaxBytes = 128 * 1024;
struct MappingLimits {
    // An exec's arguments stored whole, in order, up to this many bytes in all; the rest is
    // declared cut (argv_truncated, argv_cut_args, argv_cut_bytes), never dropped silently.
    uint64_t argv_max_bytes = kDefaultArgvMaxBytes;
    // The most bytes of type and payload an event may have to be written at all (a ring takes
    // an event of at most half its capacity, §3.1.6; the capacity may change while the source
    // runs): the arguments are cut to fit under it as well, with the same declaration. Empty:
    // no such bound.
    std::function<uint64_t()> max_event_bytes;
};
AuditEvent map_event(auparse_state_t* au, const MappingLimits& limits = {});

// The name of the record auparse's cursor is on ("SYSCALL"), or "UNKNOWN[<type>]" for a type
// libaudit has no name for — as auditd writes it.
std::string record_type_name(auparse_state_t* au);

// An `audit.lost` event (docs/AUDIT.md "Loss"): `records` records lost before they became
// events, where (`source`: kernel, socket or reassembly), noticed now (`noticed_time`, ns).
// `reassembly` adds the serial and the record types of the late records.
AuditEvent lost_event(uint64_t records, const char* source);
AuditEvent lost_event(uint64_t records, const char* source, uint64_t serial,
                      const std::vector<std::string>& record_types);

// An `audit.lost` with `source: "serial"` (issue 40 item 7): events the kernel numbered and the
// reader never received — `events` in all, `ranges` of missing serials ([first, last] in the
// kernel's numbers, at most kMaxSerialRanges: the caller splits longer lists).
inline constexpr size_t kMaxSerialRanges = 512;
AuditEvent serial_lost_event(std::span<const std::pair<uint32_t, uint32_t>> ranges);

// What is written instead of an event the ring cannot take (larger than `max_event_bytes` even
// with its arguments cut: records with huge fields, or a ring made smaller since it was
// mapped): an `audit.lost` with `source: "size"`, its `records`, `serial`, `event_type` and
// `event_bytes` (type and payload) — a declared loss, not a gap.
AuditEvent oversized_event(const AuditEvent& event, uint64_t max_event_bytes);

}  // namespace kmes::audit
