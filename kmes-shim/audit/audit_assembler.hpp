// Audit records → whole events, with libauparse's feed API (issue 24). The kernel sends each
// record as one netlink message (type + "audit(SEC.MILLI:SERIAL): fields"); an event is every
// record of one serial, ended by EOE, a PROCTITLE, a type that stands alone (< 1300 or ≥ 2100)
// or a timeout — auparse decides, as auditd's plugins and ausearch do. Not thread-safe: one
// owner (the audit source's thread, or a test).
//
// What auparse does not say, this class does (docs/AUDIT.md "Loss"):
//   - an event handed on by the timeout before its end came — a syscall event (it has a
//     SYSCALL record) without EOE or PROCTITLE — carries `"incomplete": true`;
//   - records of a serial whose event was already handed on (they came after the timeout, or
//     after the event's end) are not a new event: they are counted in an `audit.lost` event
//     with `source: "reassembly"`, `records`, `serial` and their `record_types`;
//   - a record whose text does not start with the kernel's "audit(SEC.MILLI:SERIAL):" is never
//     given to auparse (its events would be garbled); it goes to the `malformed` callback.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string_view>
#include <unordered_set>

#include "audit_event.hpp"

namespace kmes::audit {

class AuditAssembler {
public:
    using Sink = std::function<void(AuditEvent)>;
    // A record refused before reassembly: its netlink type (0 for a log line) and its text.
    using Malformed = std::function<void(int type, std::string_view text)>;

    // `timeout_s`: an event whose end never came is handed on this many seconds after its last
    // record (auparse's EOE timeout; process-wide in libauparse). `malformed` may be empty.
    AuditAssembler(Sink sink, unsigned timeout_s, Malformed malformed = {}, MappingLimits limits = {});
    ~AuditAssembler();
    AuditAssembler(const AuditAssembler&) = delete;
    AuditAssembler& operator=(const AuditAssembler&) = delete;

    // One record as the kernel sends it: the netlink message type and its text. Returns the
    // record's serial (nullopt: malformed, not fed).
    std::optional<uint64_t> feed_record(int type, std::string_view text);
    // One line of audit.log ("type=SYSCALL msg=audit(…): …"), for tests and the fuzzer.
    void feed_line(std::string_view line);
    // Hand on events whose time is up (call now and then while records are quiet).
    void age();
    // Hand on everything still open (shutdown).
    void flush();

private:
    static void on_event(auparse_state_t* au, int cb_event_type, void* self);
    void hand_on(auparse_state_t* au);
    void malformed(int type, std::string_view text);
    bool remembered(uint64_t serial) const { return handed_on_.count(serial) != 0; }
    void remember(uint64_t serial);

    Sink sink_;
    Malformed malformed_;
    MappingLimits limits_;
    auparse_state_t* au_ = nullptr;
    // Serials of the events handed on lately, to tell a late record from a new event. A late
    // record comes within seconds of its event; at 20,000 events/s this reaches back 3 s.
    static constexpr size_t kRememberedSerials = 65536;
    std::unordered_set<uint64_t> handed_on_;
    std::deque<uint64_t> handed_on_order_;
};

}  // namespace kmes::audit
