// The Shim's audit source (docs/AUDIT.md): started, restarted on a change of the "Audit" keys,
// stopped with the shim; each audit event written into a ring as "the kernel" writes any kernel
// event (origin class KMES_ORIGIN_AUDIT).
#include <time.h>
#include <unistd.h>

#include <algorithm>

#include <spdlog/spdlog.h>

#include "identity.hpp"
#include "peer.hpp"
#include "producer_ring.hpp"
#include "shim.hpp"

namespace kmes::shim {
namespace {

int64_t clock_ns(clockid_t clock) {
    timespec ts{};
    clock_gettime(clock, &ts);
    return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// The start time (clock ticks since boot) of the process the event is about, when that process
// still runs and is provably the event's subject: it started no later than the event — a pid is
// not given to another process while its process lives, so a process that already had this pid
// at the event's time is the one. An exited process (most execs of short programs, by the time
// their records arrive) has none.
//
// One /proc read per event (PERFORMANCE §14, "What each design step is worth": a third of the
// /proc reads went with the step that made it one). The start time counts in ticks (10 ms): a process started in the same tick
// as the event, just after it, passes the check; it would have to have the event's pid, which the
// kernel hands out cyclically — the pid space (pid_max, at least 32,768) would have to wrap within
// those 10 ms. Checking the process's uids against the event's guarded against nothing more: a
// process's uids may change after the event anyway (setuid), its identity does not.
std::optional<uint64_t> subject_start_time(const audit::AuditEvent& event) {
    if (!event.pid || *event.pid <= 0 || !event.audit_time) return std::nullopt;
    const auto start = process_start_time(*event.pid);
    if (!start) return std::nullopt;
    // The event's time on the boot clock the start time counts on (the kernel writes audit
    // times in milliseconds: the event happened before its time + 1 ms).
    const int64_t event_boot_ns = *event.audit_time - (clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_BOOTTIME));
    static const int64_t tick_ns = 1'000'000'000 / sysconf(_SC_CLK_TCK);
    if (int64_t(*start) * tick_ns > event_boot_ns + 1'000'000) return std::nullopt;  // a later process
    return start;
}

// The ring every audit event goes into. The CPU an audited syscall ran on is not in its records,
// and the CPU the source's thread happens to run on means nothing; one ring keeps the audit
// events in one sequence, in the kernel's order, and gives eventd one shard's batches to commit
// instead of two half as large (PERFORMANCE §14, "What each design step is worth": 2.12× →
// 1.91× auditd RAW at 1,000 execs/s with CommitDelayMs 20). Issue 40: while the source runs,
// emitters write the other rings (emit_ring), so no emitter can overwrite audit events and a
// gap in this ring is the kernel source's loss alone.
constexpr uint32_t kAuditRing = 0;

// One ring write holds at most this share of the ring: a write is published at once, so the
// drain reading behind it must still find its first event when it wakes (overwrite-oldest), and
// the ring's lock (§3.1.3) is held for the write. An eighth: 512 KiB of the default 4 MiB, about
// 500 exec events — a 50 ms receive round at 10,000 execs/s; 8 KiB of the smallest ring.
constexpr uint64_t kAuditWriteShare = 8;

// The most bytes of type and payload an audit event may have for a ring of `capacity` to take
// it: an event is at most half the ring (§3.1.6), its header and identity stamps included.
uint64_t max_audit_event_bytes(uint64_t capacity) { return capacity / 2 - KMES_BASE_HEADER_SIZE - KMES_IDENTITY_SIZE; }

}  // namespace

void Shim::apply_audit(const audit::AuditSettings& wanted) {
    std::lock_guard lock(audit_mutex_);
    if (stopping_.load()) return;
    audit::AuditSettings settings = wanted;
    // The undo files live beside the socket (/run/kmes installed, ./var/run under scripts/run).
    settings.runtime_dir = std::filesystem::path(config_.socket_path).parent_path();
    if (audit_applied_ && *audit_applied_ == settings) return;
    audit_applied_ = settings;
    audit_.reset();  // a running source gives everything back before a new one starts
    kernel_ring_reserved_.store(false, std::memory_order_relaxed);
    if (settings.mode == audit::Mode::off) return;
    auto started = audit::AuditSource::start(
        settings, [this](std::span<const audit::AuditEvent> events) { write_audit_events(events); },
        [this](std::string_view type, const nlohmann::json& payload) {
            write_self_event(type, payload);
            if (type == audit::kAuditFailedEvent) fail("audit source: " + payload.value("error", std::string()));
        },
        // Read per event: BufferCapacity may change while the source runs.
        [this] { return max_audit_event_bytes(rings_->capacity()); });
    if (!started) {
        // Said once per configuration; the shim runs on without the source (a kernel booted
        // with audit=0, no CAP_AUDIT_*, another daemon in mode "daemon", a refused rule).
        // "auto" asks for audit where there is one: a container or a kernel without it is not an
        // error then (the shipped default; an error line would stand in every such journal).
        if (settings.mode == audit::Mode::automatic)
            spdlog::info("audit source not started (Audit.Mode auto, running without kernel audit events): {}",
                         started.error().message);
        else
            spdlog::error("audit source not started: {}", started.error().message);
        write_self_event("kmes.audit_unavailable",
                         {{"mode", audit::mode_name(settings.mode)}, {"error", started.error().message}});
        return;
    }
    audit_ = std::move(*started);
    kernel_ring_reserved_.store(true, std::memory_order_relaxed);
}

uint32_t Shim::emit_ring(uint32_t cpu) const {
    const uint32_t rings = rings_->cpu_count();
    if (rings < 2 || !kernel_ring_reserved_.load(std::memory_order_relaxed)) return cpu % rings;
    return 1 + cpu % (rings - 1);
}

// A receive round's events in as few ring writes as the ring's size allows: each write wakes
// eventd's drain once, and each wake-up of an idle eventd costs a commit and its fsync
// (PERFORMANCE §14: writes of at most 16 KiB made 2–3 commits of every 50 ms round).
void Shim::write_audit_events(std::span<const audit::AuditEvent> events) {
    std::vector<EventInput> inputs;
    std::vector<Identity> identities;
    inputs.reserve(events.size());
    identities.reserve(events.size());
    uint64_t bytes = 0;
    auto write = [&] {
        if (!inputs.empty()) rings_->write(kAuditRing, KMES_ORIGIN_AUDIT, inputs, identities);
        inputs.clear();
        identities.clear();
        bytes = 0;
    };
    // Events the ring cannot take, replaced by their declared loss (audit.lost, source "size";
    // docs/AUDIT.md "Arguments"): the ring would drop them whole, leaving only a gap in its
    // sequence. Reserved for all: `inputs` points into it.
    std::vector<audit::AuditEvent> oversized;
    oversized.reserve(events.size());
    for (const audit::AuditEvent& mapped : events) {
        const uint64_t max_event = max_audit_event_bytes(rings_->capacity());
        const uint64_t mapped_bytes = mapped.type.size() + mapped.payload.size();
        const bool fits = mapped_bytes <= max_event;
        if (!fits)
            spdlog::warn("audit: a {} event of {} bytes does not fit the ring (at most {}): written as audit.lost",
                         mapped.type, mapped_bytes, max_event);
        const audit::AuditEvent& event =
            fits ? mapped : oversized.emplace_back(audit::oversized_event(mapped, max_event));
        const EventInput input{event.type, event.payload};
        const uint64_t size = event_size_of(input);
        // The ring's capacity as it is now: a resize may change it between two writes.
        if (bytes + size > std::max<uint64_t>(1, rings_->capacity() / kAuditWriteShare)) write();
        bytes += size;
        inputs.push_back(input);
        // The subject's tokens and, while its process lives, its process GUID: its audit
        // events join the events it emits itself (identity.hpp).
        Identity& identity = identities.emplace_back();
        if (event.euid) identity.effective_token = base::token_guid(*event.euid);
        if (event.uid) identity.true_token = base::token_guid(*event.uid);
        if (auto start = subject_start_time(event)) identity.process = process_guid(boot_id_, *event.pid, *start);
    }
    write();
}

}  // namespace kmes::shim
