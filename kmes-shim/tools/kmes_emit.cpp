// kmes-emit: emit events onto the KMES ring of the CPU this process runs on, through
// kmes_emit (PSD-003 §4.1.2) or kmes_emit_batch (§4.1.3). Quiet unless --verbose, so that
// scripts and tests read only the exit code and, on failure, the errno name on stderr.
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/cli.hpp"
#include "base/reserved_types.hpp"
#include "errno_text.hpp"
#include "kmes/kmes.h"

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kExitOk = 0;
constexpr int kExitEmitError = 1;
constexpr int kExitUsage = 2;

// With --retry-eagain: back off from 1 ms, doubling to at most 256 ms, and give up when the
// shim has accepted nothing for this long (a batch larger than the per-process bucket never
// fits, and waiting forever would hide that).
constexpr auto kFirstBackoff = std::chrono::milliseconds(1);
constexpr auto kMaxBackoff = std::chrono::milliseconds(256);
constexpr auto kGiveUpWithoutProgress = std::chrono::seconds(10);

struct Options {
    std::string type;
    std::optional<std::string> json;
    std::optional<std::string> msgpack_file;
    uint64_t count = 1;
    uint32_t batch = 0;  // 0: one kmes_emit per event
    double rate = 0;     // events per second; 0: as fast as possible
    bool retry_eagain = false;
    bool verbose = false;
};

struct UsageError {
    std::string message;
};

// The payload bytes: --json encoded to msgpack, the --msgpack file as is, or {} (an empty
// msgpack map, 0x80). The file is not validated here: the shim judges msgpack (§4.1.2 step 8),
// so an invalid file is how one sees EINVAL.
std::vector<uint8_t> load_payload(const Options& o) {
    if (o.json) {
        try {
            return nlohmann::json::to_msgpack(nlohmann::json::parse(*o.json));
        } catch (const nlohmann::json::parse_error& e) {
            throw UsageError{"--json is not valid JSON (" + std::string(e.what()) + "): " + *o.json};
        }
    }
    if (o.msgpack_file) {
        std::vector<uint8_t> bytes;
        if (*o.msgpack_file == "-") {
            bytes.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
            return bytes;
        }
        std::ifstream in(*o.msgpack_file, std::ios::binary);
        if (!in) throw UsageError{"cannot read the --msgpack file " + *o.msgpack_file + ": " + std::strerror(errno)};
        bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
        return bytes;
    }
    return nlohmann::json::to_msgpack(nlohmann::json::object());
}

// Why the shim said no, in the words of the §4 validation order.
std::string emit_advice(int code, const std::string& type) {
    if (code == EPERM && base::is_reserved_type(type))
        return "the type " + type +
               " is in a namespace only eventd and kmes-shimd write (synthetic., audit., kmes., "
               "bpf., alert.): no emitter may use it, root included; choose a namespace of your own.";
    switch (code) {
        case EAGAIN:
            return "the per-process rate limit (MaxEmitRatePerProcess) is used up; lower --rate, or pass "
                   "--retry-eagain "
                   "to wait and retry.";
        case EINVAL:
            return "the shim rejected the event: empty or non-UTF-8 type, invalid msgpack payload, or nesting deeper "
                   "than MaxNestingDepth.";
        case ENOSPC:
            return "the event is larger than MaxEventSize or than half the ring capacity.";
        case EFAULT:
            return "the payload memory could not be read.";
        default:
            return kmes::tools::shim_advice(code, "emit");
    }
}

// Keeps the average at `rate` events per second: event k is due at start + k / rate.
class Pacer {
public:
    explicit Pacer(double rate) : rate_(rate), start_(Clock::now()) {}
    void wait_until_due(uint64_t event_index) const {
        if (rate_ <= 0) return;
        const auto due = start_ + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(static_cast<double>(event_index) / rate_));
        std::this_thread::sleep_until(due);
    }

private:
    double rate_;
    Clock::time_point start_;
};

// libkmes picks the ring from sched_getcpu() at each call (as the kernel would), so pinning
// keeps every event of this run on one ring — the CPU we start on, which `taskset -c N`
// chooses. Failure to pin only weakens that promise; it is not an error.
void pin_to_current_cpu(bool verbose) {
    const int cpu = sched_getcpu();
    cpu_set_t set;
    CPU_ZERO(&set);
    if (cpu >= 0) CPU_SET(cpu, &set);
    if (cpu < 0 || sched_setaffinity(0, sizeof set, &set) != 0) {
        if (verbose) std::fprintf(stderr, "kmes-emit: cannot pin to one CPU; events may spread over rings\n");
    }
}

int run(const Options& o, const std::vector<uint8_t>& payload) {
    const uint32_t per_call = o.batch == 0 ? 1 : o.batch;
    const kmes_emit_entry entry{o.type.data(), static_cast<uint16_t>(o.type.size()), payload.data(),
                                static_cast<uint32_t>(payload.size())};
    const std::vector<kmes_emit_entry> entries(per_call, entry);

    pin_to_current_cpu(o.verbose);
    const Pacer pacer(o.rate);
    const auto started = Clock::now();
    auto last_progress = started;
    std::chrono::milliseconds backoff = kFirstBackoff;
    uint64_t emitted = 0;
    uint64_t eagain_retries = 0;

    while (emitted < o.count) {
        const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(per_call, o.count - emitted));
        pacer.wait_until_due(emitted);
        uint32_t done = 0;
        int rc;
        if (o.batch == 0) {
            rc = kmes_emit(entry.event_type, entry.event_type_len, entry.payload, entry.payload_len);
            if (rc == 0) done = 1;
        } else {
            rc = kmes_emit_batch(entries.data(), n, &done);
            if (rc == 0) done = n;
        }
        const int code = errno;
        emitted += done;
        if (done > 0) {
            last_progress = Clock::now();
            backoff = kFirstBackoff;
        }
        if (rc == 0) continue;

        // A batch rejected for EAGAIN emitted nothing (the bucket is charged all or nothing,
        // §4.1.3 step 3), so retrying resends the same entries.
        if (code == EAGAIN && o.retry_eagain && Clock::now() - last_progress < kGiveUpWithoutProgress) {
            ++eagain_retries;
            std::this_thread::sleep_for(backoff);
            backoff = std::min<std::chrono::milliseconds>(backoff * 2, kMaxBackoff);
            continue;
        }
        const char* call = o.batch == 0 ? "kmes_emit" : "kmes_emit_batch";
        std::fprintf(stderr, "kmes-emit: %s failed: %s; %llu of %llu events emitted\n", call,
                     kmes::tools::errno_text(code).c_str(), static_cast<unsigned long long>(emitted),
                     static_cast<unsigned long long>(o.count));
        std::string advice = emit_advice(code, o.type);
        if (code == EAGAIN && o.retry_eagain) {
            advice = "gave up after " + std::to_string(kGiveUpWithoutProgress.count()) + " s without progress" +
                     (o.batch > 1 ? ": a --batch larger than MaxEmitRatePerProcess never fits the per-process "
                                    "bucket; use a smaller --batch."
                                  : ".");
        }
        if (!advice.empty()) std::fprintf(stderr, "kmes-emit: %s\n", advice.c_str());
        return kExitEmitError;
    }

    if (o.verbose) {
        const double secs = std::chrono::duration<double>(Clock::now() - started).count();
        std::fprintf(stderr,
                     "kmes-emit: emitted %llu events of type %s (%zu-byte payload) on cpu %d in %.3f s "
                     "(%.0f events/s, %s, %llu EAGAIN retries)\n",
                     static_cast<unsigned long long>(emitted), o.type.c_str(), payload.size(), sched_getcpu(), secs,
                     secs > 0 ? static_cast<double>(emitted) / secs : 0.0,
                     o.batch == 0 ? "kmes_emit" : ("kmes_emit_batch of " + std::to_string(o.batch)).c_str(),
                     static_cast<unsigned long long>(eagain_retries));
    }
    return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
    base::cli::App app{
        "kmes-emit — emit events onto a KMES ring (through kmes-shimd), like a program calling\n"
        "kmes_emit()/kmes_emit_batch(). Every event of one run goes to the ring of the CPU the\n"
        "process starts on (it pins itself there); choose the ring with `taskset -c N kmes-emit ...`.\n"
        "The payload is msgpack: --json is encoded with nlohmann::json::to_msgpack, --msgpack sends a\n"
        "file's bytes unchanged (the shim validates them), and without either the payload is {}.\n"
        "Silent on success unless --verbose. On failure prints the errno name (EPERM, EAGAIN, EINVAL,\n"
        "ENOSPC, ENOENT, ECONNREFUSED, ...) and what it means to stderr.",
        "kmes-emit"};
    Options o;
    std::string json_text, msgpack_path;
    app.add_option("-t,--type", o.type,
                   "event type, e.g. demo.click (UTF-8, 1..65535 bytes; not under synthetic., audit., kmes., bpf., "
                   "alert.: those are the product's own)")
        ->required();
    auto* json_opt = app.add_option("-j,--json", json_text, "payload as JSON text, encoded to msgpack (default: {})");
    auto* msgpack_opt = app.add_option("-m,--msgpack", msgpack_path, "payload: raw msgpack bytes from FILE (- = stdin)")
                            ->type_name("FILE");
    json_opt->excludes(msgpack_opt);
    msgpack_opt->excludes(json_opt);
    app.add_option("-n,--count", o.count, "number of events to emit")->type_name("N")->capture_default_str();
    app.add_option("-b,--batch", o.batch,
                   "emit with kmes_emit_batch, B events per call (one timestamp\n"
                   "per batch); without it every event is one kmes_emit call")
        ->type_name("B")
        ->check_range(1, KMES_MAX_BATCH);
    app.add_option("-r,--rate", o.rate,
                   "at most R events per second on average (batches are paced\n"
                   "as a whole); 0, the default: as fast as possible")
        ->type_name("R");
    app.add_flag("--retry-eagain", o.retry_eagain,
                 "on EAGAIN (per-process rate limit) back off 1..256 ms and\n"
                 "retry instead of failing; gives up with exit 1 after 10 s\n"
                 "without progress. Without it EAGAIN fails at once (exit 1)");
    app.add_flag("-v,--verbose", o.verbose, "print a summary (count, cpu, duration, rate, retries) to stderr");
    app.set_version_flag("-V,--version", "kmes-emit " EVENTD_VERSION " (eventd)", "print the version and exit");
    app.footer(
        "Exit status: 0 all events emitted, 1 an emit failed (errno name printed; events before it were\n"
        "emitted), 2 usage error (bad option, invalid --json, unreadable --msgpack file).\n"
        "\n"
        "Environment:\n"
        "  KMES_SOCKET  socket of kmes-shimd (default " KMES_DEFAULT_SOCKET
        ")\n"
        "\n"
        "Examples:\n"
        "  kmes-emit --type demo.hello                          # one event, payload {}\n"
        "  kmes-emit -t demo.click --json '{\"x\":3,\"y\":4}'\n"
        "  taskset -c 1 kmes-emit -t demo.x -n 100              # 100 events on ring 1\n"
        "  kmes-emit -t bench.x -n 100000 --batch 256 -v        # batched, with a summary\n"
        "  kmes-emit -t demo.tick -n 600 --rate 10              # 10 events/s for a minute\n"
        "  kmes-emit -t demo.raw --msgpack payload.bin\n"
        "  kmes-emit -t demo.x -n 5000 --retry-eagain          # non-root: wait out the rate limit\n"
        "Watch the events with: kmes-tail --follow");
    if (const auto parsed = app.parse(argc, argv); !parsed.go_on) {
        if (parsed.error.empty()) return parsed.exit_code;  // --help, --version
        std::fprintf(stderr, "%s: %s\nRun '%s --help' for the options and examples.\n", "kmes-emit",
                     parsed.error.c_str(), "kmes-emit");
        return kExitUsage;
    }
    if (o.count == 0 || !(o.rate >= 0)) {
        std::fprintf(stderr, "kmes-emit: %s\n",
                     o.count == 0 ? "--count must be at least 1" : "--rate must be positive");
        return kExitUsage;
    }
    if (o.type.size() > UINT16_MAX) {
        std::fprintf(stderr, "kmes-emit: --type is %zu bytes; at most 65535 fit the header's type_len\n",
                     o.type.size());
        return kExitUsage;
    }
    if (json_opt->count()) o.json = json_text;
    if (msgpack_opt->count()) o.msgpack_file = msgpack_path;

    std::vector<uint8_t> payload;
    try {
        payload = load_payload(o);
    } catch (const UsageError& e) {
        std::fprintf(stderr, "kmes-emit: %s\n", e.message.c_str());
        return kExitUsage;
    }
    if (payload.size() > UINT32_MAX) {
        std::fprintf(stderr, "kmes-emit: payload is %zu bytes; at most 4294967295 fit payload_len\n", payload.size());
        return kExitUsage;
    }
    return run(o, payload);
}
