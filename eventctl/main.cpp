// eventctl: the command-line client of eventd's query socket (issue 4; PSD-008 §8.8). It sends
// one query, prints the result in the chosen format and exits 0 (success, empty results
// included), 1 (eventd answered with an error, or the connection failed: message on stderr,
// nothing on stdout) or 2 (usage). Queries never open a database; `eventctl seal` and
// `eventctl verify` (seal_commands.hpp) work on a store directory, read-only but for the keys.
#include <strings.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "base/cli.hpp"
#include "help_text.hpp"
#include "base/interrupt.hpp"
#include "pretty_wrap.hpp"
#include "query_input.hpp"
#include "record_writer.hpp"
#include "rules_commands.hpp"
#include "seal_commands.hpp"
#include "session.hpp"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitEventdError = 1;
constexpr int kExitUsage = 2;
constexpr int kExitInterrupted = 130;  // 128 + SIGINT, as a shell reports it

constexpr const char* kVersionLine = "eventctl " EVENTD_VERSION " (eventd)";

int usage_error(const std::string& message) {
    std::fprintf(stderr, "eventctl: %s\nRun 'eventctl --help' for the options, the query language and examples.\n",
                 message.c_str());
    return kExitUsage;
}

// The words that are commands rather than queries (any case: `eventctl STATUS` is the same).
bool is_word(const std::string& arg, const char* word) { return strcasecmp(arg.c_str(), word) == 0; }


}  // namespace

int main(int argc, char** argv) {
    // The store-directory commands (issue 28) have their own options; everything else is a query.
    if (argc > 1 && is_word(argv[1], "seal")) return eventctl::run_seal_command(argc - 1, argv + 1);
    if (argc > 1 && is_word(argv[1], "verify")) return eventctl::run_verify_command(argc - 1, argv + 1);
    if (argc > 1 && is_word(argv[1], "rules")) return eventctl::run_rules_command(argc - 1, argv + 1);
    base::cli::App app{eventctl::kHelpDescription, "eventctl"};
    std::string query_arg, file_arg, socket_arg, format_arg = "pretty";
    bool show_version = false;
    auto* query_opt = app.add_option("QUERY", query_arg,
                                     "the query, e.g. 'EVENTS kacs.* SINCE 1h ago TAKE 20'; '-' reads it\n"
                                     "from standard input; or a command: status, help, version");
    auto* file_opt =
        app.add_option("-f,--file", file_arg, "read the query from FILE (UTF-8; - = stdin)")->type_name("FILE");
    auto* socket_opt = app.add_option("-s,--socket", socket_arg,
                                      "eventd's query socket (QuerySocketPath); default $EVENTD_SOCKET,\n"
                                      "else " EVENTCTL_DEFAULT_SOCKET)
                           ->type_name("PATH");
    app.add_option("-o,--format", format_arg,
                   "pretty (default), jsonl, json or msgpack (see Output below);\n"
                   "for status also openmetrics (Prometheus)")
        ->type_name("FORMAT")
        ->check_member({"pretty", "jsonl", "json", "msgpack", "openmetrics"});
    std::string cursor_file_arg;
    bool allow_gap = false;
    auto* cursor_opt = app.add_option("--cursor-file", cursor_file_arg,
                                      "resume a stream after the cursor saved in FILE (from the oldest\n"
                                      "record when FILE does not exist yet), print records as they come\n"
                                      "and save the cursor after each batch written (see Resuming below)")
                           ->type_name("FILE");
    app.add_flag("--allow-gap", allow_gap,
                 "with --cursor-file: when retention deleted records after the saved\n"
                 "cursor, go on with the records still stored after it (and say how\n"
                 "many were lost) instead of failing");
    bool utc = false, local = false, all_fields = false;
    auto* utc_opt = app.add_flag("--utc", utc, "pretty: event times in UTC, 2026-11-24T04:11:00.061943023Z (default)");
    app.add_flag("--local", local, "pretty: event times in the local time zone (TZ), with its offset")
        ->excludes(utc_opt);
    auto* all_fields_opt = app.add_flag("--all-fields", all_fields,
                                        "pretty: every header field of a record (boot_id, cpu_id, sequence,\n"
                                        "origin_class, the identity GUIDs), one line per record; by default\n"
                                        "the time, the type, the subject and the payload's fields, wrapped\n"
                                        "to the terminal");
    uint32_t width = 0;
    auto* width_opt = app.add_option("--width", width,
                                     "pretty: wrap records at N columns (0: never, one line per record);\n"
                                     "default: the terminal's width, else $COLUMNS, else 120")
                          ->type_name("N")
                          ->check([](const std::string& text) -> std::string {
                              uint32_t n = 0;
                              const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), n);
                              const bool number = error == std::errc() && end == text.data() + text.size();
                              if (number && (n == 0 || n >= eventctl::kMinWidth)) return "";
                              return text + (number ? " columns is too narrow" : " is not a number of columns") +
                                     ": give 0 (never wrap) or at least " + std::to_string(eventctl::kMinWidth);
                          })
                          ->excludes(all_fields_opt);
    app.add_flag("-V,--version", show_version, "print the version and exit");
    app.footer(eventctl::kHelpFooter);
    if (const auto parsed = app.parse(argc, argv); !parsed.go_on)
        return parsed.error.empty() ? parsed.exit_code : usage_error(parsed.error);  // --help: printed

    const bool have_query = query_opt->count() > 0;
    if (have_query && file_opt->count() > 0)
        return usage_error("give the query either as the argument or with --file, not both");
    if (show_version || (have_query && is_word(query_arg, "version"))) {
        std::printf("%s\n", kVersionLine);
        return kExitOk;
    }
    if (have_query && is_word(query_arg, "help")) {
        std::printf("%s", app.help().c_str());
        return kExitOk;
    }
    if (!have_query && file_opt->count() == 0)
        return usage_error("no query given: pass it as the argument, '-' or --file FILE");

    eventctl::SessionOptions options;
    options.format = *eventctl::parse_format(format_arg);  // checked by IsMember above
    options.pretty.zone = local ? eventctl::TimeZone::local : eventctl::TimeZone::utc;
    options.pretty.all_fields = all_fields;
    options.pretty.width = width_opt->count() > 0
                               ? eventctl::LineWidth::fixed(width)
                               : eventctl::LineWidth::of_output(STDOUT_FILENO, std::getenv("COLUMNS"));
    options.socket_path = eventctl::socket_path(socket_opt->count() ? std::optional<std::string>(socket_arg) : std::nullopt);
    if (allow_gap && cursor_opt->count() == 0) return usage_error("--allow-gap needs --cursor-file FILE");
    if (cursor_opt->count() > 0) {
        if (cursor_file_arg.empty()) return usage_error("--cursor-file needs a file name");
        if (format_arg == "json")
            return usage_error(
                "--cursor-file continues the output across runs, which one JSON array cannot do: use --format "
                "jsonl, msgpack or pretty");
        options.cursor_file = cursor_file_arg;
        options.allow_gap = allow_gap;
    }
    if (have_query && is_word(query_arg, "status")) {
        if (options.cursor_file) return usage_error("--cursor-file resumes EVENTS queries, not status");
        options.query = "STATUS";
        options.status_view = true;
    } else if (format_arg == "openmetrics") {
        return usage_error("--format openmetrics is for `eventctl status` (eventd's counters), not for queries");
    } else {
        auto text = eventctl::load_query(have_query ? std::optional<std::string>(query_arg) : std::nullopt,
                                         file_opt->count() ? std::optional<std::string>(file_arg) : std::nullopt);
        if (!text) return usage_error(text.error().message);
        options.query = std::move(text.value());
    }

    if (!base::install_interrupt_handlers()) {
        std::fprintf(stderr, "eventctl: cannot set up Ctrl-C handling (pipe2 failed)\n");
        return kExitEventdError;
    }
    auto end = eventctl::run_session(options);
    if (!end) {
        std::fprintf(stderr, "eventctl: %s\n", end.error().message.c_str());
        return kExitEventdError;
    }
    if (end.value() == eventctl::SessionEnd::interrupted_early) {
        std::fprintf(stderr, "eventctl: interrupted before the result was complete; nothing printed\n");
        return kExitInterrupted;
    }
    return kExitOk;
}
