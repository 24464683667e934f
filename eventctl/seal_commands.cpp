#include "seal_commands.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "base/display_escape.hpp"
#include "base/cli.hpp"
#include "base/hex.hpp"
#include "base/interrupt.hpp"
#include "fetch_records.hpp"
#include "help_text.hpp"
#include "protocol/client.hpp"
#include "protocol/reply.hpp"
#include "seal/compare_copies.hpp"
#include "seal/sealing_key.hpp"
#include "seal/verify_report.hpp"
#include "seal/verify_store.hpp"
#include "session.hpp"

namespace eventctl {
namespace {

// verify's exit codes (docs/EVENTCTL.md): everything sealed verifies; something is broken;
// usage or a store that cannot be read; intact, but rows after the last checkpoint unsealed.
constexpr int kExitVerified = 0;
constexpr int kExitBroken = 1;
constexpr int kExitUsage = 2;
constexpr int kExitUnsealed = 3;

int usage_error(const char* command, const std::string& message) {
    std::fprintf(stderr, "eventctl %s: %s\nRun 'eventctl %s --help' for the options.\n", command, message.c_str(),
                 command);
    return kExitUsage;
}

// Progress on stderr at most once a second, on a terminal only (scripts read stdout).
class Progress {
public:
    void say(const std::string& text, bool last = false) {
        if (!tty_) return;
        const auto now = std::chrono::steady_clock::now();
        if (!last && now - shown_ < std::chrono::seconds(1)) return;
        shown_ = now;
        std::fprintf(stderr, "\r%s\033[K%s", text.c_str(), last ? "\n" : "");
    }
    void clear() {
        if (tty_) std::fprintf(stderr, "\r\033[K");
    }

private:
    bool tty_ = isatty(STDERR_FILENO) == 1;
    std::chrono::steady_clock::time_point shown_{};
};

// A key given as its 64 hex digits, or as a file holding them (its last line).
base::Result<eventd::seal::PublicKey> read_key(const std::string& arg) {
    std::ifstream in(arg);
    if (!in) return eventd::seal::parse_verification_key(arg);
    std::string line, last;
    while (std::getline(in, line))
        if (!line.empty()) last = line;
    return eventd::seal::parse_verification_key(last);
}

// VERIFY through eventd (admins): eventd seals every shard, verifies, and sends a record per file.
base::Result<std::vector<eventd::seal::FileReport>> verify_through_eventd(const std::string& socket,
                                                                          const std::string& key_hex) {
    auto records = fetch_records(socket, "VERIFY \"" + key_hex + "\"");  // 64 hex digits: nothing to escape
    if (!records) return records.error();
    std::vector<eventd::seal::FileReport> files;
    for (const auto& record : *records) {
        const auto j = nlohmann::json::from_msgpack(record.begin(), record.end(), true, false);
        if (auto file = eventd::seal::report_from_record(j)) files.push_back(std::move(*file));
    }
    return files;
}

// Issue 28 item 5: the store against the checkpoints a collector holds of it.
int compare_with_collector(const std::string& store, const std::string& socket, const std::string& host,
                           const eventd::seal::PublicKey& key) {
    std::string query = "EVENTS synthetic.checkpoint";
    if (!host.empty()) query += " WHERE host == " + nlohmann::json(host).dump();  // a JSON string is a query string
    auto records = fetch_records(socket, query);
    if (!records) {
        std::fprintf(stderr, "eventctl verify: the collector at %s: %s\n", socket.c_str(),
                     records.error().message.c_str());
        return kExitUsage;
    }
    std::vector<eventd::seal::Checkpoint> forwarded;
    for (const auto& record : *records)
        if (auto c = eventd::seal::parse_checkpoint(record)) forwarded.push_back(std::move(*c));
    auto compared = eventd::seal::compare_with_forwarded(store, forwarded, key);
    if (!compared) {
        std::fprintf(stderr, "eventctl verify: %s\n", compared.error().message.c_str());
        return kExitUsage;
    }
    for (const auto& f : compared->findings) {
        std::printf("%s: BROKEN: %s at row %lld (%s): %s\n", f.file.c_str(), eventd::seal::kind_name(f.kind),
                    static_cast<long long>(f.row), eventd::seal::finding_time(f.time_ns).c_str(),
                    base::display_escaped(f.what).c_str());
    }
    std::printf("against the collector: %llu forwarded checkpoints of %llu files of this store%s: %s\n",
                static_cast<unsigned long long>(compared->forwarded), static_cast<unsigned long long>(compared->files),
                compared->other_key
                    ? (", " + std::to_string(compared->other_key) + " of other hosts (another key) or forged ignored").c_str()
                    : "",
                compared->findings.empty() ? "the store holds the newest of each" : "FAILED");
    return compared->findings.empty() ? kExitVerified : kExitBroken;
}

// One line per file, then the summary; the exit code (offline and through eventd alike).
int print_reports(const std::vector<eventd::seal::FileReport>& reports) {
    uint64_t rows = 0, broken = 0, unsealed = 0;
    for (const auto& f : reports) {
        rows += f.rows;
        std::string line = f.file + ": " + std::to_string(f.rows) + " rows, " + std::to_string(f.checkpoints) +
                           " checkpoints";
        if (f.pre_chain_rows) line += ", " + std::to_string(f.pre_chain_rows) + " from before the chain (not protected)";
        if (f.awaiting_retention_rows) {
            line += ", " + std::to_string(f.awaiting_retention_rows) +
                    " before retention's anchor, not deleted yet (not protected)";
        }
        if (f.broken) {
            ++broken;
            const auto& b = *f.broken;
            line += ": BROKEN: " + std::string(eventd::seal::kind_name(b.kind));
            if (b.row) line += " at row " + std::to_string(b.row);
            if (b.time_ns) line += " (" + eventd::seal::finding_time(b.time_ns) + ")";
            line += ": " + base::display_escaped(b.what);  // names a row's event type: an emitter's text
        } else if (f.unsealed) {
            ++unsealed;
            line += ": verified through row " + std::to_string(f.sealed_through) + "; " +
                    base::display_escaped(f.unsealed->what);
        } else {
            line += ": verified";
        }
        std::printf("%s\n", line.c_str());
    }
    const size_t files = reports.size();
    if (broken) {
        std::printf("verify: FAILED: %llu of %zu files broken\n", static_cast<unsigned long long>(broken), files);
        return kExitBroken;
    }
    if (unsealed) {
        std::printf("verify: intact, %llu rows in %zu files; %llu files end with unsealed rows\n",
                    static_cast<unsigned long long>(rows), files, static_cast<unsigned long long>(unsealed));
        return kExitUnsealed;
    }
    std::printf("verify: OK: %llu rows in %zu files, all sealed\n", static_cast<unsigned long long>(rows), files);
    return kExitVerified;
}

}  // namespace

int run_seal_command(int argc, const char* const* argv) {
    base::cli::App app{
        "eventctl seal --setup — make the forward-secure sealing keys of an event store (issue 28).\n"
        "Writes DIR/sealing.key (secret, 0600, owned as DIR) and DIR/sealing.certs, and prints the\n"
        "verification key as the last line: keep it off this machine; `eventctl verify` needs it.\n"
        "eventd seals the store (signed checkpoints) from its next reload or start while sealing.key exists.",
        "eventctl seal"};
    bool setup = false;
    std::string store;
    uint32_t epoch_seconds = 900;
    double years = 10;
    app.add_flag("--setup", setup, "make the keys (the only action; required)");
    app.add_option("--store", store, "the store directory (eventd's EventStorePath)")->type_name("DIR")->required();
    app.add_option("--epoch-seconds", epoch_seconds,
                   "how long each key lives; a key taken from this machine can seal\n"
                   "nothing older than its epoch (default 900: 15 minutes)")
        ->type_name("N")
        ->check_range(1, 86400 * 366);
    app.add_option("--years", years, "how far ahead keys are made (default 10)")->type_name("Y");
    const auto parsed = app.parse(argc, argv);
    if (!parsed.go_on) return parsed.error.empty() ? parsed.exit_code : usage_error("seal", parsed.error);
    if (!setup) return usage_error("seal", "say --setup: it is the one thing `eventctl seal` does");
    if (!(years > 0)) return usage_error("seal", "--years must be more than 0");

    Progress progress;
    eventd::seal::SetupOptions options;
    options.epoch_seconds = epoch_seconds;
    options.years = years;
    options.progress = [&progress](uint64_t done, uint64_t all) {
        progress.say("eventctl seal: made keys for " + std::to_string(done) + " of " + std::to_string(all) +
                         " epochs (" + std::to_string(done * 100 / all) + " %)",
                     done == all);
    };
    auto key = eventd::seal::setup_keys(store, options);
    if (!key) {
        std::fprintf(stderr, "eventctl seal: %s\n", key.error().message.c_str());
        return 1;
    }
    std::printf("Sealing keys written: %s/sealing.key (secret) and %s/sealing.certs.\n"
                "eventd seals this store from its next reload or start (systemctl reload eventd).\n"
                "Keep the verification key below off this machine; check the store with\n"
                "  eventctl verify --store %s --key KEY\n"
                "%s\n",
                store.c_str(), store.c_str(), store.c_str(), key->c_str());
    return 0;
}

int run_verify_command(int argc, const char* const* argv) {
    base::cli::App app{
        "eventctl verify — check that an event store is what eventd sealed (issue 28): recompute\n"
        "every shard's hash chain and check every checkpoint's signature against the verification\n"
        "key. Works on a stopped store, a running one, or a copy (--store); without --store, eventd\n"
        "seals every shard and verifies its own store (administrators). For each file it prints the first\n"
        "broken place (row, time, what broke). Exit 0: everything verifies; 1: something was\n"
        "changed, removed, reordered or resealed; 2: usage, or the store cannot be read; 3: intact,\n"
        "but rows written after the last checkpoint are not sealed yet.",
        "eventctl verify"};
    std::string store, key_arg, socket_arg;
    auto* store_opt = app.add_option("--store", store,
                                     "the store directory (or a copy of it); without it eventd seals\n"
                                     "every shard and verifies its own store (administrators)")
                          ->type_name("DIR");
    std::string against_arg, host_arg;
    auto* against_opt = app.add_option("--against", against_arg,
                                       "with --store: also compare the store with the checkpoints a\n"
                                       "collector eventd holds of it (its query socket): a store rolled\n"
                                       "back or truncated after its last forwarded checkpoint")
                            ->type_name("SOCKET");
    app.add_option("--host", host_arg, "with --against: only this host's checkpoints (its Eventd-Host name)")
        ->type_name("NAME");
    auto* socket_opt = app.add_option("-s,--socket", socket_arg,
                                      "eventd's query socket, without --store; default $EVENTD_SOCKET,\n"
                                      "else " EVENTCTL_DEFAULT_SOCKET)
                           ->type_name("PATH");
    app.add_option("--key", key_arg,
                   "the verification key `eventctl seal --setup` printed: its 64 hex\n"
                   "digits, or a file that holds them")
        ->type_name("KEY")
        ->required();
    const auto parsed = app.parse(argc, argv);
    if (!parsed.go_on) return parsed.error.empty() ? parsed.exit_code : usage_error("verify", parsed.error);
    auto key = read_key(key_arg);
    if (!key) return usage_error("verify", key.error().message);
    if (store_opt->count() == 0) {
        if (against_opt->count()) return usage_error("verify", "--against compares a store directory: give --store");
        if (!base::install_interrupt_handlers()) {
            std::fprintf(stderr, "eventctl verify: cannot set up Ctrl-C handling\n");
            return kExitUsage;
        }
        const std::string socket =
            socket_path(socket_opt->count() ? std::optional<std::string>(socket_arg) : std::nullopt);
        auto files = verify_through_eventd(socket, base::hex_text(*key));
        if (!files) {
            std::fprintf(stderr, "eventctl verify: %s\n", files.error().message.c_str());
            return kExitUsage;
        }
        return print_reports(*files);
    }
    if (socket_opt->count()) return usage_error("verify", "--socket is for a verification through eventd, not --store");
    if (against_opt->count() == 0 && !host_arg.empty()) return usage_error("verify", "--host needs --against");

    Progress progress;
    eventd::seal::VerifyOptions options;
    options.key = *key;
    options.now_ns = uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count());
    options.progress = [&progress](const std::string& file, uint64_t rows) {
        progress.say("eventctl verify: " + file + ": " + std::to_string(rows) + " rows");
    };
    auto report = eventd::seal::verify_store(store, options);
    progress.clear();
    if (!report) {
        std::fprintf(stderr, "eventctl verify: %s\n", report.error().message.c_str());
        return kExitUsage;
    }
    std::vector<eventd::seal::FileReport> files = std::move(report->files);
    const int verified = print_reports(files);
    if (against_opt->count() == 0) return verified;
    if (!base::install_interrupt_handlers()) {
        std::fprintf(stderr, "eventctl verify: cannot set up Ctrl-C handling\n");
        return kExitUsage;
    }
    const int compared = compare_with_collector(store, against_arg, host_arg, *key);
    if (verified == kExitBroken || compared == kExitBroken) return kExitBroken;
    // A collector that could not be asked is not a comparison that passed: 2, even beside an
    // intact store with an unsealed tail (3 would hide the error).
    if (compared == kExitUsage) return kExitUsage;
    return std::max(verified, compared);
}

}  // namespace eventctl
