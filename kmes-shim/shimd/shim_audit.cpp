// The Shim's audit source (docs/AUDIT.md): started, restarted on a change of the "Audit" keys,
// stopped with the shim; each audit event written into the ring of the CPU the source's thread
// runs on, as "the kernel" writes any kernel event (origin class KMES_ORIGIN_AUDIT).
#include <sched.h>

#include <spdlog/spdlog.h>

#include "identity.hpp"
#include "shim.hpp"

namespace kmes::shim {

void Shim::apply_audit(const audit::AuditSettings& wanted) {
    std::lock_guard lock(audit_mutex_);
    if (stopping_.load()) return;
    audit::AuditSettings settings = wanted;
    // The undo files live beside the socket (/run/kmes installed, ./var/run under scripts/run).
    settings.runtime_dir = std::filesystem::path(config_.socket_path).parent_path();
    if (audit_applied_ && *audit_applied_ == settings) return;
    audit_applied_ = settings;
    audit_.reset();  // a running source gives everything back before a new one starts
    if (settings.mode == audit::Mode::off) return;
    auto started = audit::AuditSource::start(
        settings, [this](const audit::AuditEvent& e) { write_audit_event(e); },
        [this](std::string_view type, const nlohmann::json& payload) { write_self_event(type, payload); });
    if (!started) {
        // Said once per configuration; the shim runs on without the source (a kernel booted
        // with audit=0, no CAP_AUDIT_*, another daemon in mode "daemon", a refused rule).
        spdlog::error("audit source not started: {}", started.error().message);
        write_self_event("kmes.audit_unavailable",
                         {{"mode", audit::mode_name(settings.mode)}, {"error", started.error().message}});
        return;
    }
    audit_ = std::move(*started);
}

void Shim::write_audit_event(const audit::AuditEvent& event) {
    const std::vector<uint8_t> bytes = nlohmann::json::to_msgpack(event.payload);
    const EventInput input{event.type, bytes};
    // The subject's tokens, so its audit events join its own events (identity.hpp); the
    // process GUID needs the process's start time, which an exited process no longer has.
    Identity identity{};
    if (event.euid) identity.effective_token = token_guid(*event.euid);
    if (event.uid) identity.true_token = token_guid(*event.uid);
    const int cpu = sched_getcpu();
    rings_->write(cpu < 0 ? 0 : static_cast<uint32_t>(cpu) % rings_->cpu_count(), KMES_ORIGIN_AUDIT, {&input, 1},
                  identity);
}

}  // namespace kmes::shim
