#include "audit_assembler.hpp"

#include <auparse.h>
#include <libaudit.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace kmes::audit {

AuditAssembler::AuditAssembler(Sink sink, unsigned timeout_s, Malformed malformed, MappingLimits limits)
    : sink_(std::move(sink)), malformed_(std::move(malformed)), limits_(limits) {
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
    static_cast<AuditAssembler*>(self)->hand_on(au);
}

void AuditAssembler::remember(uint64_t serial) {
    if (!handed_on_.insert(serial).second) return;
    handed_on_order_.push_back(serial);
    if (handed_on_order_.size() > kRememberedSerials) {
        handed_on_.erase(handed_on_order_.front());
        handed_on_order_.pop_front();
    }
}

void AuditAssembler::hand_on(auparse_state_t* au) {
    const au_event_t* ts = auparse_get_timestamp(au);
    const uint64_t serial = ts ? ts->serial : 0;
    const bool late = serial != 0 && remembered(serial);
    if (late) {
        // Late records of an event already handed on: not an event of their own, but lost.
        std::vector<std::string> record_types;
        if (auparse_first_record(au) > 0) {
            do {
                if (auparse_get_type(au) != AUDIT_EOE) record_types.push_back(record_type_name(au));
            } while (auparse_next_record(au) > 0);
        }
        if (record_types.empty()) return;  // a lone late EOE carries nothing
        sink_(lost_event(record_types.size(), "reassembly", serial, record_types));
        return;
    }
    if (serial != 0) remember(serial);
    sink_(map_event(au, limits_));  // one walk of the records for the event's own types and `incomplete`
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

// The serial of a record that starts as the kernel starts every record,
// "audit(SEC.MILLI:SERIAL):"; nullopt for any other text.
std::optional<uint64_t> record_header_serial(std::string_view text) {
    uint64_t value = 0;
    auto digits = [&](char end) {
        size_t n = 0;
        value = 0;
        while (n < text.size() && text[n] >= '0' && text[n] <= '9') {
            value = value * 10 + static_cast<uint64_t>(text[n] - '0');  // unsigned: 20 digits wrap, harmlessly
            ++n;
        }
        if (n == 0 || n > 20 || n >= text.size() || text[n] != end) return false;
        text.remove_prefix(n + 1);
        return true;
    };
    if (text.substr(0, 6) != "audit(") return std::nullopt;
    text.remove_prefix(6);
    if (!digits('.') || !digits(':') || !digits(')') || text.empty() || text[0] != ':') return std::nullopt;
    return value;  // of the last digits read: the serial
}
}  // namespace

void AuditAssembler::malformed(int type, std::string_view text) {
    if (malformed_) malformed_(type, text);
}

std::optional<uint64_t> AuditAssembler::feed_record(int type, std::string_view text) {
    // The line auditd writes for it (log_format RAW): auparse parses exactly that.
    const char* name = audit_msg_type_to_name(type);
    std::string line = "type=";
    line += name ? name : "UNKNOWN[" + std::to_string(type) + "]";
    line += " msg=";
    // The kernel's text may end in NULs or a newline: one record, one line.
    text = up_to_nul(text);
    while (!text.empty() && text.back() == '\n') text.remove_suffix(1);
    const std::optional<uint64_t> serial = record_header_serial(text);
    if (!serial) {
        malformed(type, text);
        return std::nullopt;
    }
    line.append(text.data(), text.size());
    line += '\n';
    auparse_feed(au_, line.data(), line.size());
    return serial;
}

void AuditAssembler::feed_line(std::string_view line) {
    line = up_to_nul(line);
    const size_t msg = line.find(" msg=");
    if (line.substr(0, 5) != "type=" || msg == std::string_view::npos || !record_header_serial(line.substr(msg + 5))) {
        return malformed(0, line);
    }
    std::string copy(line);
    if (copy.empty() || copy.back() != '\n') copy += '\n';
    auparse_feed(au_, copy.data(), copy.size());
}

void AuditAssembler::age() { auparse_feed_age_events(au_); }

void AuditAssembler::flush() { auparse_flush_feed(au_); }

}  // namespace kmes::audit
