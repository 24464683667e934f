#include "audit_source.hpp"

#include <libaudit.h>
#include <linux/audit.h>
#include <linux/netlink.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <system_error>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "audit_assembler.hpp"
#include "audit_rules.hpp"
#include "serial_tracker.hpp"
#include "base/durable_file.hpp"
#include "base/sync_point.hpp"
#include "base/thread_boundary.hpp"

namespace kmes::audit {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr const char* kUndoFile = "audit-rules.undo";
constexpr const char* kSettingsFile = "audit-kernel.orig";
constexpr auto kCheckInterval = std::chrono::seconds(1);
// While records flow, the reader sleeps after emptying the socket before it looks again, so
// that it (and the mapping thread after it, and eventd's drain after that) wakes once for many
// records instead of once per record: the kernel sends an event as 3-8 records, one netlink
// message each, and the fixed cost of a wake-up of the three was more than the mapping at low
// rates (PERFORMANCE §14: 4 ms → up to 20 ms took 1,000 execs/s from 2.15× to 1.17× auditd RAW,
// up to 50 ms to 1.12×, 1.00× with CommitDelayMs 20). Records wait at most kMaxCoalescing more (an audit event reaches
// eventd up to 50 ms later). The pause never lets the socket fill at a steady rate: at the rate
// the last round came in, at most a quarter of ReceiveBufferBytes may arrive meanwhile (a full
// daemon socket makes the kernel drop records uncounted: record_queue.hpp). A sudden step in
// rate during a pause is what ReceiveBufferBytes' default (16 MiB: ~8,000 records, 60 ms of
// 40,000 events/s) is sized for.
constexpr auto kMaxCoalescing = std::chrono::milliseconds(50);
// What a record takes of the socket's receive buffer (skb truesize; the kernel allocates an
// audit record's buffer for 1 KiB of text and more for longer ones): an upper estimate.
constexpr double kRecordTruesize = 2048;
// Records taken from the socket per system call (recvmmsg), and at most per receive round.
constexpr size_t kRecordsPerReceive = 64;
constexpr size_t kMaxRoundRecords = 4096;
// A round's events are handed on together (run(): `pending`; the shim cuts them to its ring's
// size), at the latest when they hold this much: what the mapping keeps meanwhile.
constexpr size_t kMaxPendingBytes = 1024 * 1024;

// The kernel's status (AUDIT_GET), asked on `fd` and awaited (records arriving meanwhile on a
// daemon socket would be lost to this read: it is used before the socket is a daemon's).
base::Result<audit_status> request_status(int fd) {
    if (audit_request_status(fd) < 0) return base::errno_error("audit: AUDIT_GET");
    for (int tries = 0; tries < 64; ++tries) {
        audit_reply reply{};
        const int rc = audit_get_reply(fd, &reply, GET_REPLY_BLOCKING, 0);
        if (rc < 0) return base::Error{-rc, "audit: no answer to AUDIT_GET"};
        if (reply.type == AUDIT_GET && reply.status) return *reply.status;
    }
    return base::Error{EIO, "audit: no AUDIT_GET answer among 64 messages"};
}

// Asks the kernel for its status (AUDIT_GET) without waiting for anything: the answer comes in
// on the socket like a record, and the reader thread takes it. Not libaudit's
// audit_request_status: that asks for an acknowledgement too and waits for it on the socket —
// up to 40 s of polls — while the reader thread has already taken it (found by the frozen-shim
// loss test: the mapping thread stalled 40 s and the shim did not stop in time).
void send_status_request(int fd) {
    static uint32_t sequence = 0;
    nlmsghdr request{};
    request.nlmsg_len = NLMSG_LENGTH(0);
    request.nlmsg_type = AUDIT_GET;
    request.nlmsg_flags = NLM_F_REQUEST;  // no NLM_F_ACK: the status reply is the answer
    request.nlmsg_seq = ++sequence;
    sockaddr_nl kernel{};
    kernel.nl_family = AF_NETLINK;
    (void)!sendto(fd, &request, request.nlmsg_len, MSG_DONTWAIT, reinterpret_cast<const sockaddr*>(&kernel),
                  sizeof kernel);
}

bool alive(pid_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

// The kernel counts backlog_wait_time in jiffies (CONFIG_HZ); auditctl passes the number as is.
uint32_t jiffies_of_ms(uint32_t ms) {
    if (ms == 0) return 0;
    uint32_t hz = 250;  // Debian's default
    utsname u{};
    if (uname(&u) == 0) {
        std::ifstream config(std::string("/boot/config-") + u.release);
        for (std::string line; std::getline(config, line);)
            if (line.rfind("CONFIG_HZ=", 0) == 0) hz = static_cast<uint32_t>(std::stoul(line.substr(10)));
    }
    return static_cast<uint32_t>((uint64_t(ms) * hz + 999) / 1000);
}

// Netlink socket drops of the socket with inode `inode` (/proc/net/netlink, column Drops);
// nullopt when they cannot be read (no /proc, the socket not listed) — never a 0 that the next
// difference would turn into ~1.8e19 lost records (issue 40).
std::optional<uint64_t> socket_drops(ino_t inode) {
    std::ifstream in("/proc/net/netlink");
    if (!in) return std::nullopt;
    std::string header;
    std::getline(in, header);
    for (std::string line; std::getline(in, line);) {
        std::istringstream row(line);
        std::string sk;
        unsigned long long eth, pid, groups, rmem, wmem, dump, locks, drops, ino;
        if (row >> sk >> eth >> pid >> std::hex >> groups >> std::dec >> rmem >> wmem >> dump >> locks >> drops >> ino)
            if (ino == inode) return drops;
    }
    return std::nullopt;
}

// What a previous shim, killed before it could clean up, left in the kernel: its rules and
// the settings it changed. Undone before anything else.
void clean_up_leftovers(const std::filesystem::path& dir, int fd) {
    const size_t rules = LoadedRules::undo_leftovers(dir / kUndoFile);
    if (rules) spdlog::warn("audit: undid {} rule change(s) a previous kmes-shimd left behind", rules);
    std::ifstream in(dir / kSettingsFile);
    if (!in) return;
    const json orig = json::parse(in, nullptr, false);
    if (orig.is_object()) {
        audit_set_backlog_limit(fd, orig.value("backlog_limit", 64u));
        audit_set_backlog_wait_time(fd, orig.value("backlog_wait_time", 15000u));
        audit_set_enabled(fd, orig.value("enabled", 0u));
        spdlog::warn("audit: restored the kernel's audit settings a previous kmes-shimd changed");
    }
    std::error_code ec;
    std::filesystem::remove(dir / kSettingsFile, ec);
}

}  // namespace

const char* mode_name(Mode mode) {
    switch (mode) {
        case Mode::off:
            return "off";
        case Mode::multicast:
            return "multicast";
        case Mode::daemon:
            return "daemon";
        case Mode::automatic:
            return "auto";
    }
    return "off";
}

struct AuditSource::Kernel {
    int fd = -1;
    bool daemon = false;
    audit_status original{};
    std::unique_ptr<LoadedRules> rules;
    std::filesystem::path settings_file;
    ino_t inode = 0;
    uint32_t last_lost = 0;
    uint64_t last_drops = 0;

    ~Kernel() { release(); }

    // Daemon mode: everything changed, changed back. Idempotent.
    void release() {
        if (fd < 0) return;
        if (daemon) {
            if (rules) rules->remove_all();
            audit_set_pid(fd, 0, WAIT_YES);
            audit_set_backlog_limit(fd, original.backlog_limit);
            audit_set_backlog_wait_time(fd, original.backlog_wait_time);
            audit_set_enabled(fd, original.enabled);
            std::error_code ec;
            std::filesystem::remove(settings_file, ec);
            daemon = false;
        }
        close(fd);
        fd = -1;
    }
};

AuditSource::AuditSource(Emit emit, Report report, MaxEventBytes max_event_bytes, const AuditSettings& settings)
    : emit_(std::move(emit)),
      report_(std::move(report)),
      max_event_bytes_(std::move(max_event_bytes)),
      settings_(settings) {}

AuditSource::~AuditSource() { stop(); }

base::Result<std::unique_ptr<AuditSource>> AuditSource::start(const AuditSettings& settings, Emit emit, Report report,
                                                              MaxEventBytes max_event_bytes) {
    std::unique_ptr<AuditSource> source(
        new AuditSource(std::move(emit), std::move(report), std::move(max_event_bytes), settings));
    auto kernel = std::make_unique<Kernel>();
    std::error_code ec;
    std::filesystem::create_directories(settings.runtime_dir, ec);

    // The kernel's state first: whether audit exists, and who holds the daemon role.
    const int control = audit_open();
    if (control < 0)
        return base::Error{errno ? errno : EPROTONOSUPPORT,
                     "audit: no audit netlink socket (kernel without audit, or booted with audit=0)"};
    clean_up_leftovers(settings.runtime_dir, control);
    auto status = request_status(control);
    if (!status) {
        audit_close(control);
        return status.error();
    }
    Mode mode = settings.mode;
    const bool daemon_taken = status->pid != 0 && alive(static_cast<pid_t>(status->pid));
    if (mode == Mode::automatic) mode = daemon_taken ? Mode::multicast : Mode::daemon;
    if (mode == Mode::daemon && daemon_taken) {
        audit_close(control);
        return base::Error{EEXIST, "audit: another audit daemon is registered (pid " + std::to_string(status->pid) +
                                 "); use Mode \"multicast\" or \"auto\" beside it"};
    }
    if (mode == Mode::daemon && status->enabled == 2) {
        audit_close(control);
        return base::Error{EPERM,
                     "audit: the kernel's audit configuration is locked (enabled 2, auditctl -e 2); "
                     "use Mode \"multicast\""};
    }

    if (mode == Mode::multicast) {
        audit_close(control);
        kernel->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_AUDIT);
        if (kernel->fd < 0) return base::errno_error("audit: netlink socket");
        sockaddr_nl address{};
        address.nl_family = AF_NETLINK;
        if (bind(kernel->fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0)
            return base::errno_error("audit: bind the netlink socket");
        const int group = AUDIT_NLGRP_READLOG;
        if (setsockopt(kernel->fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &group, sizeof group) != 0)
            return base::errno_error("audit: join the read-only multicast group (needs CAP_AUDIT_READ)");
    } else {
        // The rules file first: a file that does not parse changes nothing in the kernel.
        RulesFile parsed_rules;
        if (!settings.rules_file.empty()) {
            std::ifstream in(settings.rules_file);
            if (!in) {
                base::Error unreadable = base::errno_error("audit: cannot read RulesFile " + settings.rules_file);
                audit_close(control);
                return unreadable;
            }
            std::stringstream text;
            text << in.rdbuf();
            auto parsed = parse_rules(text.str(), settings.rules_file);
            if (!parsed) {
                audit_close(control);
                return parsed.error();
            }
            parsed_rules = std::move(*parsed);
        }
        kernel->fd = control;
        kernel->original = *status;
        kernel->settings_file = settings.runtime_dir / kSettingsFile;
        // The settings to restore are on disk before any is changed (a SIGKILLed shim's next
        // start restores them).
        const json orig = {{"enabled", status->enabled},
                           {"backlog_limit", status->backlog_limit},
                           {"backlog_wait_time", status->backlog_wait_time}};
        if (base::Status s = base::write_file_atomically(kernel->settings_file, orig.dump() + "\n", 0600); !s) return s.error();
        if (audit_set_pid(kernel->fd, static_cast<uint32_t>(getpid()), WAIT_YES) < 0) {
            std::filesystem::remove(kernel->settings_file, ec);
            return base::Error{EEXIST, "audit: the kernel refused the daemon role (another audit daemon took it?)"};
        }
        kernel->daemon = true;  // from here on, release() undoes everything
        audit_set_enabled(kernel->fd, 1);
        audit_set_backlog_limit(kernel->fd, settings.backlog_limit);
        audit_set_backlog_wait_time(kernel->fd, jiffies_of_ms(settings.backlog_wait_time_ms));
        kernel->rules = std::make_unique<LoadedRules>(settings.runtime_dir / kUndoFile);
        if (parsed_rules.delete_existing) {
            auto deleted = kernel->rules->delete_existing();
            if (!deleted) return base::Error{deleted.error().code, settings.rules_file + ": -D: " + deleted.error().message};
            if (*deleted)
                spdlog::info("audit: -D deleted the {} rule(s) loaded before; they are put back when the shim stops",
                             *deleted);
        }
        // The shim's own syscalls are never audited (its writes would feed back).
        if (base::Status s = kernel->rules->add({"-A", "exit,never", "-F", "pid=" + std::to_string(getpid())}); !s)
            return s.error();
        for (const RuleLine& r : parsed_rules.rules) {
            if (base::Status s = kernel->rules->add(r.args); !s)
                return base::Error{s.error().code,
                             settings.rules_file + " line " + std::to_string(r.line) + ": " + s.error().message};
        }
        const int flags = fcntl(kernel->fd, F_GETFL);
        fcntl(kernel->fd, F_SETFL, flags | O_NONBLOCK);
    }
    const int bytes = static_cast<int>(settings.receive_buffer_bytes);
    if (setsockopt(kernel->fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes) != 0)
        setsockopt(kernel->fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
    struct stat st {};
    if (fstat(kernel->fd, &st) == 0) kernel->inode = st.st_ino;
    // The kernel's `lost` counter runs since boot: only its increases from now on are ours to
    // report. (Read before the daemon role was taken: asking again now could swallow records.)
    kernel->last_lost = status->lost;
    kernel->last_drops = socket_drops(kernel->inode).value_or(0);  // a new socket: 0

    source->mode_ = mode;
    source->kernel_ = std::move(kernel);
    source->wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (source->wake_fd_ < 0) return base::errno_error("audit: eventfd");
    // As much may wait behind the socket as in it (ReceiveBufferBytes): record_queue.hpp.
    source->queue_ = std::make_unique<RecordQueue>(settings.receive_buffer_bytes);
    auto failed = [raw = source.get()](const std::string& why) {
        if (raw->report_) raw->report_(kAuditFailedEvent, {{"error", why}});
    };
    source->reader_ = std::thread([raw = source.get(), failed] {
        base::run_guarded("audit reader", [raw] { raw->read(); }, failed);
        raw->queue_->close();  // the mapping thread ends when the reader does, however it ended
    });
    source->thread_ = std::thread([raw = source.get(), failed] {
        base::run_guarded("audit source", [raw] { raw->run(); }, failed);
    });
    spdlog::info("audit: {} mode{}", mode_name(mode),
                 mode == Mode::daemon ? ", " + std::to_string(source->kernel_->rules->size()) + " rule(s) loaded" : "");
    return source;
}

void AuditSource::stop() {
    if (stopping_.exchange(true)) return;
    if (wake_fd_ >= 0) {
        const uint64_t one = 1;
        (void)!write(wake_fd_, &one, sizeof one);
    }
    if (reader_.joinable()) reader_.join();
    if (thread_.joinable()) thread_.join();
    if (kernel_) kernel_->release();
    if (wake_fd_ >= 0) close(wake_fd_);
    wake_fd_ = -1;
}

void AuditSource::read() {
    const int fd = kernel_->fd;
    // One record per netlink message; MAX_AUDIT_MESSAGE_LENGTH bounds its text. Up to
    // kRecordsPerReceive of them per system call (recvmmsg): an exec event is 7 records, and the
    // syscall's own cost per record was a sixth of the shim's (PERFORMANCE §14).
    // Each slot starts aligned for the nlmsghdr read from it (the text's length is not).
    constexpr size_t kSlot = NLMSG_ALIGN(MAX_AUDIT_MESSAGE_LENGTH + NLMSG_HDRLEN + 64);
    std::vector<char> buffer(kSlot * kRecordsPerReceive);
    std::array<iovec, kRecordsPerReceive> iov{};
    std::array<mmsghdr, kRecordsPerReceive> msgs{};
    for (size_t i = 0; i < kRecordsPerReceive; ++i) {
        iov[i] = {buffer.data() + i * kSlot, kSlot};
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    const double socket_records = settings_.receive_buffer_bytes / kRecordTruesize;
    // When the socket was last seen empty, and whether the reader paused since: the records of a
    // round arrived after that (after the pause), or while poll() waited on an empty socket —
    // then only since it woke, so that the first round after a quiet spell does not read as a
    // trickle and earn a long pause in the middle of a burst.
    auto emptied_at = std::chrono::steady_clock::now();
    bool paused = false;
    while (!stopping_.load(std::memory_order_relaxed)) {
        pollfd fds[2] = {{fd, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            // Never a silent spin: the owner is told and fails in order (kAuditFailedEvent).
            throw std::system_error(errno, std::generic_category(), "audit: poll on the netlink socket");
        }
        const auto woke = std::chrono::steady_clock::now();
        RecordRound round;
        bool emptied = false;
        for (size_t call = 0; call < kMaxRoundRecords / kRecordsPerReceive; ++call) {
            const int n = recvmmsg(fd, msgs.data(), kRecordsPerReceive, MSG_DONTWAIT, nullptr);
            if (n < 0) {
                if (errno == EINTR) continue;
                if (errno == ENOBUFS) {
                    // The socket overflowed: the kernel dropped what did not fit (counted by the
                    // mapping thread from the socket's drop counter).
                    socket_overflowed_.store(true, std::memory_order_relaxed);
                    continue;
                }
                if (errno != EAGAIN && errno != EWOULDBLOCK)
                    throw std::system_error(errno, std::generic_category(), "audit: recvmmsg on the netlink socket");
                emptied = true;  // nothing more now
                break;
            }
            for (int i = 0; i < n; ++i) {
                const size_t length = msgs[i].msg_len;
                if (length < NLMSG_HDRLEN) continue;
                const char* data = static_cast<const char*>(iov[i].iov_base);
                const auto* nlh = reinterpret_cast<const nlmsghdr*>(data);
                round.add(nlh->nlmsg_type, std::string_view(data + NLMSG_HDRLEN, length - NLMSG_HDRLEN));
            }
            if (static_cast<size_t>(n) < kRecordsPerReceive) {
                emptied = true;  // fewer than asked for: the socket is empty now
                break;
            }
        }
        if (round.empty()) continue;
        const size_t records = round.messages().size();
        queue_->push(std::move(round));
        // Records came: more will follow them (the rest of their event, the next events).
        const auto now = std::chrono::steady_clock::now();
        const double seconds =
            std::max(1e-3, std::chrono::duration<double>(now - (paused ? emptied_at : woke)).count());
        emptied_at = now;
        paused = false;
        if (!emptied || stopping_.load(std::memory_order_relaxed)) continue;  // more waiting: no pause
        const double rate = double(records) / seconds;  // records a second, as they came lately
        const auto safe = std::chrono::duration<double>(socket_records / 4 / rate);
        std::this_thread::sleep_for(std::min<std::chrono::duration<double>>(kMaxCoalescing, safe));
        paused = true;
    }
}

void AuditSource::run() {
    Kernel& k = *kernel_;
    // The events of this receive round, handed on together (Emit): one ring write, one wake-up
    // of eventd's drain, one commit for a round (PERFORMANCE §14).
    std::vector<AuditEvent> pending;
    size_t pending_bytes = 0;
    auto flush_pending = [&] {
        if (pending.empty()) return;
        emit_(pending);
        pending.clear();
        pending_bytes = 0;
    };
    auto emit = [&](AuditEvent e) {
        pending_bytes += e.payload.size() + e.type.size();
        pending.push_back(std::move(e));
        if (pending_bytes >= kMaxPendingBytes) flush_pending();
    };
    auto lost = [&](uint64_t records, const char* source) {
        if (records == 0) return;
        lost_.fetch_add(records, std::memory_order_relaxed);
        emit(lost_event(records, source));
    };
    // The socket's drops since the last look, reported as lost records.
    // Unreadable drops are said once (they would be loss that no count shows), and counted
    // from the last value read when they can be read again.
    bool drops_unreadable = false;
    auto socket_loss = [&] {
        const std::optional<uint64_t> drops = socket_drops(k.inode);
        if (!drops) {
            if (!drops_unreadable) {
                spdlog::error("audit: the socket's drop counter cannot be read from /proc/net/netlink: records the "
                              "socket drops are not counted until it can be");
                if (report_) report_("kmes.audit_drops_unreadable", {{"file", "/proc/net/netlink"}});
            }
            drops_unreadable = true;
            return;
        }
        drops_unreadable = false;
        // The counter of one socket only grows; a smaller value is no loss (and no wrap-around).
        if (*drops > k.last_drops) lost(*drops - k.last_drops, "socket");
        k.last_drops = *drops;
    };
    // Records refused before reassembly since the last report: their number and the first.
    uint64_t malformed = 0;
    json first_malformed;
    AuditAssembler assembler(
        [&](AuditEvent e) {
            if (e.type == "audit.lost") {
                lost_.fetch_add(e.lost_records, std::memory_order_relaxed);
            } else {
                events_.fetch_add(1, std::memory_order_relaxed);
            }
            emit(std::move(e));
        },
        (settings_.event_timeout_ms + 999) / 1000,
        [&](int type, std::string_view text) {
            if (malformed++ != 0) return;
            const char* name = audit_msg_type_to_name(type);
            // Short and printable: the record may be anything, and a log line must stay one line.
            std::string sample(text.substr(0, 256));
            for (char& c : sample)
                if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
            first_malformed = {{"record_type", name ? name : std::to_string(type)}, {"text", sample}};
        },
        MappingLimits{settings_.argv_max_bytes, max_event_bytes_});
    auto report_malformed = [&] {
        if (malformed == 0) return;
        spdlog::warn("audit: {} record(s) without the kernel's \"audit(TIME:SERIAL):\" header were not reassembled; "
                     "first: {}",
                     malformed, first_malformed.dump());
        if (report_) report_("kmes.audit_malformed", {{"records", malformed}, {"first", first_malformed}});
        malformed = 0;
    };
    // Issue 40 item 7: the kernel's serials as a sequence; a hole that stays open for
    // EventTimeoutMs (the time an event's own records may take too) is events lost after the
    // kernel numbered them, reported in the stream like every other loss.
    SerialTracker serials(std::chrono::milliseconds(std::max<uint32_t>(settings_.event_timeout_ms, 1000)));
    auto report_holes = [&](const std::vector<SerialTracker::Range>& holes) {
        for (size_t at = 0; at < holes.size(); at += kMaxSerialRanges) {
            const auto part = std::span(holes).subspan(at, std::min(kMaxSerialRanges, holes.size() - at));
            AuditEvent e = serial_lost_event(part);
            lost_events_.fetch_add(e.lost_events, std::memory_order_relaxed);
            emit(std::move(e));
        }
    };
    auto next_check = Clock::now() + kCheckInterval;
    std::vector<RecordRound> rounds;
    for (;;) {
        rounds.clear();
        const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_check - Clock::now());
        if (!queue_->pop(rounds, std::max(wait, std::chrono::milliseconds(0)))) break;  // the reader ended
        const auto arrived = Clock::now();
        for (const RecordRound& round : rounds) {
            for (const RecordRound::Message& m : round.messages()) {
                const std::string_view data = round.payload(m);
                if (m.type == AUDIT_GET) {
                    if (data.size() >= sizeof(audit_status)) {
                        audit_status s{};
                        std::memcpy(&s, data.data(), sizeof s);
                        // `lost` is the kernel's running count since boot (it wraps at 2^32).
                        lost(static_cast<uint32_t>(s.lost - k.last_lost), "kernel");
                        k.last_lost = s.lost;
                    }
                    continue;
                }
                if (!is_audit_record(m.type)) continue;  // other control replies, acks
                KMES_SYNC_POINT("AuditSource::run:record");
                const auto serial = assembler.feed_record(m.type, data.substr(0, strnlen(data.data(), data.size())));
                // An EOE only ends its event: one whose other records were all lost is an EOE
                // alone, which libauparse hands on as nothing — that serial is a hole.
                if (serial && *serial <= UINT32_MAX && m.type != AUDIT_EOE)
                    serials.saw(static_cast<uint32_t>(*serial), arrived);
            }
        }
        // Records the queue refused (the mapping fell behind by ReceiveBufferBytes), and the
        // socket's own drops when the reader saw it overflow.
        lost(queue_->take_dropped(), "socket");
        if (socket_overflowed_.exchange(false, std::memory_order_relaxed)) socket_loss();
        if (Clock::now() >= next_check) {
            next_check = Clock::now() + kCheckInterval;
            assembler.age();
            report_holes(serials.expired(Clock::now()));
            report_malformed();
            // The socket's drops in both modes: a daemon socket that stays full loses records
            // too (the kernel's unicast fails for them), and a drop does not always surface as
            // ENOBUFS on the next receive (found by bench/audit_bench.sh: 15,000 events/s).
            socket_loss();
            if (k.daemon) send_status_request(k.fd);  // the answer comes through the reader
        }
        flush_pending();
    }
    assembler.flush();
    report_holes(serials.flush());
    flush_pending();
    report_malformed();
    spdlog::info("audit: serials: {} event(s) lost in holes; a missing serial arrived at most {} behind the highest, "
                 "{} ms after its hole opened; {} after its hole was reported",
                 lost_events_.load(std::memory_order_relaxed), serials.max_lateness_serials(),
                 std::chrono::duration_cast<std::chrono::milliseconds>(serials.max_lateness()).count(),
                 serials.late_after_report());
}

}  // namespace kmes::audit
