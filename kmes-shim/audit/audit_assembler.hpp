// Audit records → whole events, with libauparse's feed API (issue 24). The kernel sends each
// record as one netlink message (type + "audit(SEC.MILLI:SERIAL): fields"); an event is every
// record of one serial, ended by EOE, a PROCTITLE, a type that stands alone (< 1300 or ≥ 2100)
// or a timeout — auparse decides, as auditd's plugins and ausearch do. Not thread-safe: one
// owner (the audit source's thread, or a test).
#pragma once

#include <functional>
#include <string_view>

#include "audit_event.hpp"

namespace kmes::audit {

class AuditAssembler {
public:
    using Sink = std::function<void(AuditEvent)>;

    // `timeout_s`: an event whose end never came is handed on this many seconds after its last
    // record (auparse's EOE timeout; process-wide in libauparse).
    AuditAssembler(Sink sink, unsigned timeout_s);
    ~AuditAssembler();
    AuditAssembler(const AuditAssembler&) = delete;
    AuditAssembler& operator=(const AuditAssembler&) = delete;

    // One record as the kernel sends it: the netlink message type and its text.
    void feed_record(int type, std::string_view text);
    // One line of audit.log ("type=SYSCALL msg=audit(…): …"), for tests and the fuzzer.
    void feed_line(std::string_view line);
    // Hand on events whose time is up (call now and then while records are quiet).
    void age();
    // Hand on everything still open (shutdown).
    void flush();

private:
    static void on_event(auparse_state_t* au, int cb_event_type, void* self);

    Sink sink_;
    auparse_state_t* au_ = nullptr;
};

}  // namespace kmes::audit
