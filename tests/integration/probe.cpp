// kmes-probe: performs libkmes calls for the integration tests, so a test can make them as
// another user (`setpriv … kmes-probe …`) or on another CPU (`taskset -c 1 kmes-probe …`).
//
// Usage: kmes-probe STEP...   (the shim socket comes from $KMES_SOCKET, as for any client)
// Every step runs in order in this one process and prints one line "STEP key=value …";
// errno values are printed by name (EPERM, EINVAL, …), "-" for none. Steps:
//
//   attach:CPU            kmes_attach(CPU)                 → attach cpu= ok=0|1 err= cap=
//   map                   kmes_map of the last attachment  → map ok= err=
//   write-producer        store one byte into the producer page (expected: SIGSEGV)
//   write-data            store one byte into the data region (expected: SIGSEGV)
//   write-consumer        store one byte into the consumer page (reserved byte; allowed)
//   mprotect-producer     mprotect(PROT_READ|PROT_WRITE) of the producer page → ok= err=
//   mprotect-data         the same for the first data page
//   emit:N[:TYPE]         N × kmes_emit of a valid event, stops at the first failure
//                         → emit ok=<emitted> err=<errno of the failure> elapsed_us=
//                         since_start_us=<from the first step's start to this step's end>
//   emit-invalid:N        N × kmes_emit with an empty type (never valid)
//                         → emit-invalid einval=<count> other=<first other errno>
//   batch:N[:BAD]         kmes_emit_batch of N valid entries; entry BAD (optional) carries
//                         invalid msgpack → batch rc= err= emitted_out= (777777 = untouched)
//   batch-count:N         kmes_emit_batch(entries, N, …) with N outside 1..256 allowed
//   ident                 → ident pid= uid= euid=
//   hold:N                N raw connections, each asking for the boot id once and then kept
//                         open until the process ends (issue 40: one user's connections)
//                         → hold served=<replied> refused=<closed or not connected>
//   pause:MS              sleep MS milliseconds (what hold took stays held)  → pause ms=
//   silent                a connection that sends nothing, until the shim closes it
//                         → silent closed=0|1 after_ms=
//   partial               a connection that sends the first packet of a two-packet emit and
//                         never the second, until the shim closes it → partial closed= after_ms=
//   raw-emit:MS           an emit request of a header only, on a connection of its own; then
//                         waits up to MS ms for the shim to close it → raw-emit err= closed=
//
// The exit status is 0 when every step ran (a failing libkmes call is a result, not an
// error), 2 for a usage error; a fault in a write-* step ends the process with SIGSEGV.
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "kmes/kmes.h"
#include "lib/socket_io.hpp"

namespace {

constexpr uint32_t kUntouched = 777777;

const char* errno_name(int code) {
    if (code == 0) return "-";
    const char* name = strerrorname_np(code);
    return name ? name : "E?";
}

// A valid msgpack payload: {"i": n} as a fixmap with a uint32.
std::vector<uint8_t> payload_for(uint32_t n) {
    return {0x81, 0xa1, 'i', 0xce, uint8_t(n >> 24), uint8_t(n >> 16), uint8_t(n >> 8), uint8_t(n)};
}

struct Attachment {
    int fd = -1;
    uint64_t capacity = 0;
    uint8_t* base = nullptr;
};

// Prints a line and flushes, so the test still sees it if a later step kills the process.
// When the probe started: a rate-limit test bounds the tokens refilled since then.
std::chrono::steady_clock::time_point probe_start() {
    static const auto start = std::chrono::steady_clock::now();
    return start;
}

int64_t micros_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t).count();
}

void say(const std::string& line) {
    std::fputs((line + "\n").c_str(), stdout);
    std::fflush(stdout);
}

// Connections the hold step keeps open until the process ends.
std::vector<int>& held() {
    static std::vector<int> fds;
    return fds;
}

kmes::wire::RequestHeader request(kmes::wire::Op op, uint64_t total_len, uint32_t count = 0) {
    return kmes::wire::RequestHeader{kmes::wire::kMagic, static_cast<uint32_t>(op), 0, count, total_len};
}

// One connection's BOOT_ID request: true when the shim replied.
bool ask_boot_id(int fd) {
    const auto header = request(kmes::wire::Op::boot_id, sizeof(kmes::wire::RequestHeader));
    if (send(fd, &header, sizeof header, MSG_NOSIGNAL) != ssize_t(sizeof header)) return false;
    kmes::wire::Reply reply{};
    return recv(fd, &reply, sizeof reply, 0) == ssize_t(sizeof reply) && reply.error == 0;
}

// Waits (`limit_ms` at most) for the shim to close `fd`, reading any reply before that;
// whether it did.
bool closed_within(int fd, int64_t limit_ms) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(limit_ms);
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::microseconds>(until - std::chrono::steady_clock::now());
        if (left.count() <= 0) return false;
        const timeval limit{static_cast<time_t>(left.count() / 1'000'000),
                            static_cast<suseconds_t>(left.count() % 1'000'000)};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
        kmes::wire::Reply reply{};
        const ssize_t n = recv(fd, &reply, sizeof reply, 0);
        if (n == 0 || (n < 0 && errno == ECONNRESET)) return true;
        if (n < 0) return false;  // EAGAIN: the time is up
    }
}

// The line of a step that waited for the shim to close `fd` (60 s at most), with when it did.
void await_close(int fd, const std::string& step, std::chrono::steady_clock::time_point since) {
    const bool closed = closed_within(fd, 60'000);
    say(step + " closed=" + (closed ? "1" : "0") + " after_ms=" + std::to_string(micros_since(since) / 1000));
    close(fd);
}

bool require_map(const Attachment& a, const char* step) {
    if (a.base) return true;
    say(std::string(step) + " ok=0 err=no-mapping");
    return false;
}

int run_step(const std::string& step, Attachment& a) {
    const auto colon = step.find(':');
    const std::string name = step.substr(0, colon);
    const std::string arg = colon == std::string::npos ? "" : step.substr(colon + 1);
    const auto second = arg.find(':');
    const std::string arg1 = arg.substr(0, second);
    const std::string arg2 = second == std::string::npos ? "" : arg.substr(second + 1);
    const auto number = [](const std::string& s) {
        return static_cast<uint32_t>(std::strtoul(s.c_str(), nullptr, 10));
    };

    if (name == "attach") {
        uint64_t capacity = 0;
        const int fd = kmes_attach(number(arg1), &capacity);
        if (fd >= 0) a = Attachment{fd, capacity, nullptr};
        say("attach cpu=" + arg1 + " ok=" + (fd >= 0 ? "1" : "0") + " err=" + errno_name(fd >= 0 ? 0 : errno) +
            " cap=" + std::to_string(capacity));
    } else if (name == "map") {
        void* base = a.fd >= 0 ? kmes_map(a.fd, a.capacity) : nullptr;
        const int err = base ? 0 : (a.fd >= 0 ? errno : EBADF);
        a.base = static_cast<uint8_t*>(base);
        say(std::string("map ok=") + (base ? "1" : "0") + " err=" + errno_name(err));
    } else if (name == "write-producer" || name == "write-data" || name == "write-consumer") {
        if (!require_map(a, name.c_str())) return 0;
        // Reserved bytes only: if the OS failed to stop the write, nothing meaningful changes.
        const size_t offset = name == "write-producer" ? KMES_OFF_RESERVED1
                              : name == "write-data"   ? KMES_DATA_OFFSET
                                                       : KMES_OFF_NEED_WAKE + 64;
        say(name + " started");
        *reinterpret_cast<volatile uint8_t*>(a.base + offset) = a.base[offset];
        say(name + " ok=1");
    } else if (name == "mprotect-producer" || name == "mprotect-data") {
        if (!require_map(a, name.c_str())) return 0;
        uint8_t* page = name == "mprotect-producer" ? a.base : a.base + KMES_DATA_OFFSET;
        const int rc = mprotect(page, KMES_PAGE_SIZE, PROT_READ | PROT_WRITE);
        say(name + " ok=" + (rc == 0 ? "1" : "0") + " err=" + errno_name(rc == 0 ? 0 : errno));
    } else if (name == "emit") {
        const uint32_t n = number(arg1);
        const std::string type = arg2.empty() ? "probe.event" : arg2;
        const auto start = std::chrono::steady_clock::now();
        uint32_t ok = 0;
        int err = 0;
        for (; ok < n; ++ok) {
            const auto payload = payload_for(ok);
            if (kmes_emit(type.data(), uint16_t(type.size()), payload.data(), uint32_t(payload.size())) != 0) {
                err = errno;
                break;
            }
        }
        const auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start);
        say("emit ok=" + std::to_string(ok) + " err=" + errno_name(err) + " elapsed_us=" + std::to_string(us.count()) +
            " since_start_us=" + std::to_string(micros_since(probe_start())));
    } else if (name == "emit-invalid") {
        const uint32_t n = number(arg1);
        const auto payload = payload_for(0);
        uint32_t einval = 0;
        int other = 0;
        for (uint32_t i = 0; i < n; ++i) {
            if (kmes_emit("", 0, payload.data(), uint32_t(payload.size())) == 0)
                other = other ? other : -1;
            else if (errno == EINVAL)
                ++einval;
            else
                other = other ? other : errno;
        }
        say("emit-invalid einval=" + std::to_string(einval) +
            " other=" + (other == -1 ? "success" : errno_name(other)));
    } else if (name == "batch" || name == "batch-count") {
        const uint32_t n = number(arg1);
        const bool has_bad = name == "batch" && !arg2.empty();
        const uint32_t bad = has_bad ? number(arg2) : UINT32_MAX;
        static const uint8_t invalid_msgpack[] = {0xc1};  // 0xc1 is never used by msgpack
        static const char type[] = "probe.batch";
        std::vector<std::vector<uint8_t>> payloads;
        std::vector<kmes_emit_entry> entries;
        for (uint32_t i = 0; i < std::max<uint32_t>(n, 1); ++i) payloads.push_back(payload_for(i));
        for (uint32_t i = 0; i < payloads.size(); ++i) {
            entries.push_back(i == bad ? kmes_emit_entry{type, uint16_t(sizeof type - 1), invalid_msgpack, 1}
                                       : kmes_emit_entry{type, uint16_t(sizeof type - 1), payloads[i].data(),
                                                         uint32_t(payloads[i].size())});
        }
        uint32_t emitted = kUntouched;
        const int rc = kmes_emit_batch(entries.data(), n, &emitted);
        say(name + " rc=" + std::to_string(rc) + " err=" + errno_name(rc == 0 ? 0 : errno) +
            " emitted_out=" + std::to_string(emitted));
    } else if (name == "hold") {
        const uint32_t n = number(arg1);
        uint32_t served = 0, refused = 0;
        for (uint32_t i = 0; i < n; ++i) {
            const int fd = kmes::detail::connect_seqpacket(kmes::detail::shim_socket_path());
            if (fd < 0) {
                ++refused;
                continue;
            }
            const timeval limit{10, 0};  // a reply, or the refusal's close, comes at once
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
            if (ask_boot_id(fd)) {
                ++served;
                held().push_back(fd);
            } else {
                ++refused;
                close(fd);
            }
        }
        say("hold served=" + std::to_string(served) + " refused=" + std::to_string(refused));
    } else if (name == "pause") {
        std::this_thread::sleep_for(std::chrono::milliseconds(number(arg1)));
        say("pause ms=" + arg1);
    } else if (name == "silent" || name == "partial") {
        const auto since = std::chrono::steady_clock::now();
        const int fd = kmes::detail::connect_seqpacket(kmes::detail::shim_socket_path());
        if (fd < 0) {
            say(name + " closed=0 err=" + errno_name(errno));
            return 0;
        }
        if (name == "partial") {
            // The first packet of an emit whose header announces twice that many bytes.
            std::vector<uint8_t> packet(kmes::wire::kMaxPacket);
            const auto header = request(kmes::wire::Op::emit, 2 * packet.size(), 1);
            std::memcpy(packet.data(), &header, sizeof header);
            (void)send(fd, packet.data(), packet.size(), MSG_NOSIGNAL);
        }
        await_close(fd, name, since);
    } else if (name == "raw-emit") {
        const int fd = kmes::detail::connect_seqpacket(kmes::detail::shim_socket_path());
        if (fd < 0) {
            say("raw-emit err=" + std::string(errno_name(errno)) + " closed=0");
            return 0;
        }
        const auto header = request(kmes::wire::Op::emit, sizeof(kmes::wire::RequestHeader), 1);
        kmes::wire::Reply reply{};
        int err = EIO;
        if (send(fd, &header, sizeof header, MSG_NOSIGNAL) == ssize_t(sizeof header) &&
            recv(fd, &reply, sizeof reply, 0) == ssize_t(sizeof reply))
            err = reply.error;
        say("raw-emit err=" + std::string(errno_name(err)) + " closed=" + (closed_within(fd, number(arg1)) ? "1" : "0"));
        close(fd);
    } else if (name == "ident") {
        say("ident pid=" + std::to_string(getpid()) + " uid=" + std::to_string(getuid()) +
            " euid=" + std::to_string(geteuid()));
    } else {
        std::fprintf(stderr, "kmes-probe: unknown step '%s' (see the comment at the top of probe.cpp)\n", step.c_str());
        return 2;
    }
    return 0;
}

}  // namespace

// Under AddressSanitizer or ThreadSanitizer (./scripts/test --sanitize …): the write-producer
// and write-data steps exist to be killed by SIGSEGV, which the permission tests check; the
// sanitizer's own SEGV handler would turn that death into an exit status with a report. Read by
// the sanitizer at start-up only; any other build ignores them.
extern "C" const char* __asan_default_options() { return "handle_segv=0"; }
extern "C" const char* __tsan_default_options() { return "handle_segv=0"; }

int main(int argc, char** argv) {
    probe_start();
    if (argc < 2) {
        std::fprintf(stderr,
                     "usage: kmes-probe STEP... (attach:CPU map write-producer emit:N[:TYPE] batch:N[:BAD] …)\n");
        return 2;
    }
    // A write-* step is expected to fault: no core file for it.
    const rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    // The hold step may keep more connections than the usual soft limit of 1024 descriptors.
    rlimit files{};
    if (getrlimit(RLIMIT_NOFILE, &files) == 0) {
        files.rlim_cur = files.rlim_max;
        setrlimit(RLIMIT_NOFILE, &files);
    }
    Attachment attachment;
    for (int i = 1; i < argc; ++i)
        if (int rc = run_step(argv[i], attachment); rc != 0) return rc;
    return 0;
}
