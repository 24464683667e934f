// kmes-tail: a direct consumer of the KMES rings. It attaches to each CPU's ring with
// kmes::RingReader (the whole PSD-003 §5.1.9 consumer side) and prints events, sequence gaps
// (loss) and, with --info, the ring positions.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/cli.hpp"
#include "errno_text.hpp"
#include "kmes/ring_reader.hpp"
#include "tail_output.hpp"

namespace {

using kmes::RingReader;
using kmes::tools::Gap;
using kmes::tools::TailOutput;

constexpr int kExitOk = 0;
constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

// A finite wait, so a follower also notices Ctrl-C and --count reached by another thread;
// a generation change wakes wait() by itself (it re-checks the generation).
constexpr auto kWaitSlice = std::chrono::milliseconds(100);

// Set by SIGINT/SIGTERM. A signal handler can reach nothing else, hence file scope.
std::atomic<bool> g_stop_requested{false};
void request_stop(int) { g_stop_requested.store(true, std::memory_order_relaxed); }

void install_stop_handlers() {
    struct sigaction sa {};
    sa.sa_handler = request_stop;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: a futex_wait in progress returns at once
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
}

bool stopping(const TailOutput& out) { return g_stop_requested.load(std::memory_order_relaxed) || out.done(); }

struct Options {
    std::string cpu = "all";
    bool from_start = false;
    bool follow = false;
    bool json = false;
    bool info = false;
    uint64_t count = 0;
};

// --cpu: "all", or one CPU number, or a comma-separated list of them.
std::optional<std::vector<uint32_t>> parse_cpu_list(const std::string& text) {
    if (text == "all") return std::vector<uint32_t>{};
    std::vector<uint32_t> cpus;
    size_t at = 0;
    while (at <= text.size()) {
        const size_t comma = std::min(text.find(',', at), text.size());
        uint32_t cpu = 0;
        const char* first = text.data() + at;
        const char* last = text.data() + comma;
        auto [end, ec] = std::from_chars(first, last, cpu);
        if (first == last || ec != std::errc{} || end != last) return std::nullopt;
        cpus.push_back(cpu);
        at = comma + 1;
    }
    return cpus;
}

void print_attach_error(uint32_t cpu, const base::Error& e, bool explicit_cpu) {
    std::fprintf(stderr, "kmes-tail: cannot read the ring of cpu %u: %s (%s)\n", cpu,
                 kmes::tools::errno_name(e.errno_value()).c_str(), e.message.c_str());
    std::string advice = kmes::tools::shim_advice(e.errno_value(), "attach");
    if (e.code == base::ErrorCode::invalid && explicit_cpu)
        advice =
            "the shim has no ring for cpu " + std::to_string(cpu) + "; use --cpu all, or --info to list the rings.";
    if (!advice.empty()) std::fprintf(stderr, "kmes-tail: %s\n", advice.c_str());
}

// One reader per selected CPU. "all" enumerates with kmes_attach from cpu 0 until EINVAL
// (v0.22 §4.1.4: EINVAL marks the first cpu_id past the ring count).
std::optional<std::vector<RingReader>> open_readers(const std::vector<uint32_t>& selected, kmes::StartAt start) {
    std::vector<RingReader> readers;
    auto open = [&](uint32_t cpu) { return RingReader::open(cpu, kmes::ReaderOptions{.start = start}); };
    if (!selected.empty()) {
        for (uint32_t cpu : selected) {
            auto reader = open(cpu);
            if (!reader) {
                print_attach_error(cpu, reader.error(), true);
                return std::nullopt;
            }
            readers.push_back(std::move(*reader));
        }
        return readers;
    }
    for (uint32_t cpu = 0;; ++cpu) {
        auto reader = open(cpu);
        if (reader) {
            readers.push_back(std::move(*reader));
            continue;
        }
        if (reader.error().code == base::ErrorCode::invalid && cpu > 0) return readers;
        print_attach_error(cpu, reader.error(), false);
        return std::nullopt;
    }
}

// One CPU's reader plus what loss detection needs: the sequence of the last event seen.
struct CpuTail {
    RingReader reader;
    std::optional<uint64_t> last_sequence;  // nullopt: nothing known to compare against

    explicit CpuTail(RingReader r) : reader(std::move(r)) {
        if (reader.last_sequence() != 0) {
            last_sequence = reader.last_sequence();  // started at the end: the event before
        } else if (reader.read_pos() == 0 && reader.generation() == 1) {
            last_sequence = 0;  // the ring's very first event is next; sequences start at 1
        }
    }
};

// Read and print until the ring is empty, the reader reaches `until` (a write_pos of the
// current generation), or we are stopping. Gaps in the per-CPU sequence (§5.1.8: events
// lapped by the producer, or dropped for size with their sequence consumed) become gap lines.
base::Status drain(CpuTail& t, TailOutput& out, std::optional<uint64_t> until) {
    const uint64_t generation = t.reader.generation();
    while (!stopping(out)) {
        if (until && t.reader.generation() == generation && t.reader.read_pos() >= *until) return {};
        auto next = t.reader.next();
        if (!next) return next.error();
        if (!*next) return {};
        const kmes::EventView& event = **next;
        const uint64_t seq = event.sequence();
        if (t.last_sequence && seq > *t.last_sequence + 1) out.gap(Gap{t.reader.cpu(), *t.last_sequence + 1, seq - 1});
        t.last_sequence = seq;
        out.event(event);
    }
    return {};
}

void print_read_error(const CpuTail& t, const base::Error& e) {
    std::fprintf(stderr, "kmes-tail: reading the ring of cpu %u failed: %s (%s)\n", t.reader.cpu(),
                 kmes::tools::errno_name(e.errno_value()).c_str(), e.message.c_str());
    if (std::string advice = kmes::tools::shim_advice(e.errno_value(), "attach"); !advice.empty())
        std::fprintf(stderr, "kmes-tail: %s\n", advice.c_str());
}

// Without --follow: what each ring holds now, CPU by CPU, then exit. Bounded by the
// write_pos seen on entry, so a busy producer cannot keep us here forever.
int print_once(std::vector<CpuTail>& tails, TailOutput& out) {
    for (CpuTail& t : tails) {
        if (base::Status s = drain(t, out, t.reader.write_pos_now()); !s) {
            print_read_error(t, s.error());
            return kExitError;
        }
    }
    return kExitOk;
}

// --follow: one thread per CPU, each draining and then sleeping in RingReader::wait.
int follow(std::vector<CpuTail>& tails, TailOutput& out) {
    std::atomic<bool> failed{false};
    std::vector<std::thread> threads;
    for (CpuTail& t : tails) {
        threads.emplace_back([&t, &out, &failed] {
            while (!stopping(out) && !failed.load(std::memory_order_relaxed)) {
                if (base::Status s = drain(t, out, std::nullopt); !s) {
                    print_read_error(t, s.error());
                    failed.store(true, std::memory_order_relaxed);
                    return;
                }
                t.reader.wait(kWaitSlice);
            }
        });
    }
    for (auto& thread : threads) thread.join();
    return failed.load() ? kExitError : kExitOk;
}

// --info: one row (or JSON object) per CPU.
int print_info(std::vector<RingReader>& readers, TailOutput& out, bool json) {
    if (!json) {
        out.line(fmt::format("{:>4}  {:>12}  {:>10}  {:>20}  {:>20}  {:>6}", "cpu", "capacity", "generation",
                             "write_pos", "tail_pos", "fill"));
    }
    for (RingReader& r : readers) {
        // tail_pos is read first: both only grow, so write - tail cannot go negative.
        const uint64_t tail = r.tail_pos_now();
        const uint64_t write = r.write_pos_now();
        const double fill = 100.0 * static_cast<double>(write - tail) / static_cast<double>(r.capacity());
        if (json) {
            out.line(kmes::tools::dump_line({{"cpu_id", r.cpu()},
                                             {"capacity", r.capacity()},
                                             {"generation", r.generation()},
                                             {"write_pos", write},
                                             {"tail_pos", tail},
                                             {"fill_percent", std::round(fill * 100) / 100}}));
        } else {
            out.line(fmt::format("{:>4}  {:>12}  {:>10}  {:>20}  {:>20}  {:>5.1f}%", r.cpu(), r.capacity(),
                                 r.generation(), write, tail, fill));
        }
    }
    return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
    base::cli::App app{
        "kmes-tail — print the events in the KMES per-CPU rings, reading them directly from shared\n"
        "memory like any consumer (kmes_attach + kmes_map, the PSD-003 §5.1.9 read protocol). Events\n"
        "are only read, never removed: other consumers are unaffected.\n"
        "By default it shows only events written after it starts; --from-start shows everything still\n"
        "in the ring (from tail_pos). Without --follow it prints what is there and exits.\n"
        "Lost events (the producer lapped this reader, or dropped an oversized event) show as gap lines:\n"
        "  # cpu=1 gap: sequences 10..19 lost (10 events)",
        "kmes-tail"};
    Options o;
    app.add_option("-c,--cpu", o.cpu,
                   "ring(s) to read: a CPU number, a comma-separated list, or all\n"
                   "(all = every ring of the shim)")
        ->type_name("N|all")
        ->capture_default_str()
        ->check([](const std::string& v) {
            return parse_cpu_list(v) ? std::string{} : "expected a CPU number, a list like 0,2, or all; got " + v;
        });
    app.add_flag("-s,--from-start", o.from_start, "start at the oldest event still in the ring (tail_pos)");
    app.add_flag("-f,--follow", o.follow, "keep waiting for new events until Ctrl-C, SIGTERM or --count");
    app.add_flag("-j,--json", o.json,
                 "one JSON object per line instead of text. Events: event_size,\n"
                 "header_size, timestamp (ns since the epoch, UTC), sequence,\n"
                 "cpu_id, origin_class, type, effective_token, true_token,\n"
                 "process (GUIDs as xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, null\n"
                 "without identity stamps), payload (msgpack decoded to JSON;\n"
                 "null if empty; if undecodable: payload_error and payload_hex\n"
                 "instead). Gaps: {\"gap\":{\"cpu_id\":1,\"first_sequence\":10,\n"
                 "\"last_sequence\":19,\"count\":10}}");
    app.set_version_flag("-V,--version", "kmes-tail " EVENTD_VERSION " (eventd)", "print the version and exit");
    app.add_flag("-i,--info", o.info,
                 "print per ring: capacity, generation, write_pos, tail_pos and\n"
                 "fill % = (write_pos - tail_pos) / capacity, then exit (with\n"
                 "--json: one object per ring, keys cpu_id, capacity, generation,\n"
                 "write_pos, tail_pos, fill_percent)");
    app.add_option("-n,--count", o.count, "stop after N events (gap lines do not count)")->type_name("N");
    app.footer(
        "Human format, one line per event (timestamp in UTC, payload as JSON):\n"
        "  2026-11-22T17:55:22.678123456Z cpu=1 seq=42 origin=0 type=demo.x {\"a\":1}\n"
        "\n"
        "Exit status: 0 done (also after Ctrl-C/SIGTERM), 1 cannot attach or read (no shim running,\n"
        "permission denied), 2 usage error.\n"
        "\n"
        "Environment:\n"
        "  KMES_SOCKET  socket of kmes-shimd (default " KMES_DEFAULT_SOCKET
        ")\n"
        "\n"
        "Examples:\n"
        "  kmes-tail --follow                       # new events on every CPU until Ctrl-C\n"
        "  kmes-tail --from-start                   # everything still in the rings, then exit\n"
        "  kmes-tail --cpu 1 --from-start --json    # ring 1 as JSON lines\n"
        "  kmes-tail -f -n 10 --json | jq .payload  # the next 10 events' payloads\n"
        "  kmes-tail --info                         # ring sizes, positions and fill\n"
        "  kmes-tail --cpu 0,1 -f                   # rings 0 and 1 only");
    if (const auto parsed = app.parse(argc, argv); !parsed.go_on) {
        if (parsed.error.empty()) return parsed.exit_code;  // --help, --version
        std::fprintf(stderr, "%s: %s\nRun '%s --help' for the options and examples.\n", "kmes-tail",
                     parsed.error.c_str(), "kmes-tail");
        return kExitUsage;
    }
    const std::vector<uint32_t> selected = *parse_cpu_list(o.cpu);
    install_stop_handlers();

    // --info needs no read position; starting at tail_pos skips the walk to the end.
    const auto start = o.from_start || o.info ? kmes::StartAt::tail : kmes::StartAt::end;
    auto readers = open_readers(selected, start);
    if (!readers) return kExitError;

    TailOutput out(o.json, o.follow, o.info ? 0 : o.count);
    if (o.info) return print_info(*readers, out, o.json);

    std::vector<CpuTail> tails;
    tails.reserve(readers->size());
    for (RingReader& r : *readers) tails.emplace_back(std::move(r));
    return o.follow ? follow(tails, out) : print_once(tails, out);
}
