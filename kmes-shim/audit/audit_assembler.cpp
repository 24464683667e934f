#include "audit_assembler.hpp"

#include <auparse.h>
#include <libaudit.h>

#include <cstdlib>
#include <string>

namespace kmes::audit {

AuditAssembler::AuditAssembler(Sink sink, unsigned timeout_s) : sink_(std::move(sink)) {
    au_ = auparse_init(AUSOURCE_FEED, nullptr);
    if (!au_) std::abort();  // only out of memory
    auparse_set_eoe_timeout(static_cast<time_t>(timeout_s == 0 ? 1 : timeout_s));
    auparse_add_callback(
        au_, [](auparse_state_t* au, auparse_cb_event_t type, void* self) { on_event(au, type, self); }, this, nullptr);
}

AuditAssembler::~AuditAssembler() {
    if (!au_) return;
    auparse_flush_feed(au_);
    auparse_destroy(au_);
}

void AuditAssembler::on_event(auparse_state_t* au, int cb_event_type, void* self) {
    if (cb_event_type != AUPARSE_CB_EVENT_READY) return;
    static_cast<AuditAssembler*>(self)->sink_(map_event(au));
}

namespace {
// A record is text without NUL (the kernel hex-encodes any value that holds one). libauparse
// parses C strings: a NUL inside the bytes it is given makes it read past them (a heap overflow
// in auparse_do_interpretation, found by the audit_mapping fuzz target) — so a record ends at
// its first NUL, here, for every input.
std::string_view up_to_nul(std::string_view text) {
    const size_t nul = text.find('\0');
    return nul == std::string_view::npos ? text : text.substr(0, nul);
}
}  // namespace

void AuditAssembler::feed_record(int type, std::string_view text) {
    // The line auditd writes for it (log_format RAW): auparse parses exactly that.
    const char* name = audit_msg_type_to_name(type);
    std::string line = "type=";
    line += name ? name : "UNKNOWN[" + std::to_string(type) + "]";
    line += " msg=";
    // The kernel's text may end in NULs or a newline: one record, one line.
    text = up_to_nul(text);
    while (!text.empty() && text.back() == '\n') text.remove_suffix(1);
    line.append(text.data(), text.size());
    line += '\n';
    auparse_feed(au_, line.data(), line.size());
}

void AuditAssembler::feed_line(std::string_view line) {
    std::string copy(up_to_nul(line));
    if (copy.empty() || copy.back() != '\n') copy += '\n';
    auparse_feed(au_, copy.data(), copy.size());
}

void AuditAssembler::age() { auparse_feed_age_events(au_); }

void AuditAssembler::flush() { auparse_flush_feed(au_); }

}  // namespace kmes::audit
