// The Linux audit subsystem as a KMES source (issue 24; DESIGN.md §4 item 7; docs/AUDIT.md).
//
//   kernel ──netlink──► reader thread ──► AuditAssembler (libauparse) ──► emit(AuditEvent)
//   (multicast READLOG     │  every second: AUDIT_GET (daemon mode: the kernel's `lost`)
//    or unicast daemon)    └► audit.lost events for every record lost before the ring
//
// Modes:
//   multicast  joins AUDIT_NLGRP_READLOG (CAP_AUDIT_READ): receives every record whether or not
//              an audit daemon runs; changes nothing in the kernel. Best effort: records the
//              socket could not take are counted from the socket's drop counter
//              (/proc/net/netlink) and reported as lost, source "socket".
//   daemon     registers as THE audit daemon (AUDIT_SET pid), enables audit, sets the backlog
//              limit and wait time (0: the kernel drops and counts rather than stalling
//              syscalls), excludes the shim's own pid, loads the rules file; the kernel's
//              `lost` counter's increases are reported, source "kernel". At stop: the rules it
//              added are removed, the daemon role released, enabled/backlog/wait restored.
//   auto       multicast when another audit daemon is registered, else daemon.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "audit_event.hpp"
#include "base/result.hpp"
#include "record_queue.hpp"

namespace kmes::audit {

enum class Mode { off, multicast, daemon, automatic };

// The Report type of a source whose thread failed ({"error": why}).
inline constexpr const char* kAuditFailedEvent = "kmes.audit_failed";

struct AuditSettings {
    Mode mode = Mode::off;
    std::string rules_file;             // daemon mode; empty: no rules
    uint32_t backlog_limit = 8192;      // daemon mode
    uint32_t backlog_wait_time_ms = 0;  // daemon mode
    uint32_t receive_buffer_bytes = 16 << 20;  // a limit: memory only while records wait
    uint32_t event_timeout_ms = 2000;
    uint32_t argv_max_bytes = kDefaultArgvMaxBytes;  // an exec's arguments kept whole (audit_event.hpp)
    std::filesystem::path runtime_dir = "/run/kmes";  // the undo file of loaded rules
    bool operator==(const AuditSettings&) const = default;
};

const char* mode_name(Mode mode);

class AuditSource {
public:
    // The events of one receive round, in order (audit events and audit.lost): one ring write
    // and at most one wake-up of eventd for all of them.
    using Emit = std::function<void(std::span<const AuditEvent>)>;
    // A self-event of the shim about the source: kmes.audit_malformed (records refused before
    // reassembly, at most one per second with their number and the first one's text), or
    // kAuditFailedEvent (the reader thread stopped on an unexpected error: nothing reads the
    // kernel's records any more, so the owner should not run on without its source).
    using Report = std::function<void(std::string_view type, const nlohmann::json& payload)>;
    // The most bytes of type and payload an event may have for the owner to write it now
    // (MappingLimits::max_event_bytes: an exec's arguments are cut to fit). Empty: no bound.
    using MaxEventBytes = std::function<uint64_t()>;

    // Opens the netlink socket in the mode asked (auto resolved), takes the daemon role and
    // loads the rules where that applies, then starts the reader thread. Errors: audit is not
    // available (kernel booted with audit=0, no CAP_AUDIT_*), the daemon role is taken (mode
    // daemon), a rule is refused — with nothing left changed in the kernel.
    static base::Result<std::unique_ptr<AuditSource>> start(const AuditSettings& settings, Emit emit, Report report,
                                                            MaxEventBytes max_event_bytes = {});
    ~AuditSource();
    AuditSource(const AuditSource&) = delete;
    AuditSource& operator=(const AuditSource&) = delete;

    // Ends the thread, hands on events still open, removes the rules, gives the daemon role back
    // and restores the kernel's settings. Idempotent.
    void stop();

    Mode mode() const { return mode_; }  // multicast or daemon
    uint64_t events() const { return events_.load(std::memory_order_relaxed); }
    uint64_t lost_records() const { return lost_.load(std::memory_order_relaxed); }
    uint64_t lost_events() const { return lost_events_.load(std::memory_order_relaxed); }  // serial holes

private:
    struct Kernel;
    AuditSource(Emit emit, Report report, MaxEventBytes max_event_bytes, const AuditSettings& settings);
    void read();  // the reader thread: socket → queue_
    void run();   // the mapping thread: queue_ → events

    Emit emit_;
    Report report_;
    MaxEventBytes max_event_bytes_;
    AuditSettings settings_;
    Mode mode_ = Mode::off;
    std::unique_ptr<Kernel> kernel_;
    std::atomic<bool> stopping_{false};
    int wake_fd_ = -1;  // eventfd: stop() wakes the reader
    std::unique_ptr<RecordQueue> queue_;
    std::atomic<bool> socket_overflowed_{false};  // ENOBUFS seen by the reader; run() counts
    std::thread reader_;
    std::thread thread_;
    std::atomic<uint64_t> events_{0};
    std::atomic<uint64_t> lost_{0};
    std::atomic<uint64_t> lost_events_{0};
};

}  // namespace kmes::audit
