// Command lines of the benchmarks with options of their own (CLI11, as eventd and eventctl).
//
// Conventions, the same in every such benchmark: --help prints the options on stdout and exits
// 0; an unknown option, a missing or malformed value or a value out of range prints the
// program's name, the problem and a pointer to --help on stderr and exits 2.
//
// The simple in-process benchmarks (producer, consumer, wakeup, emit) keep harness.hpp's
// bench::Options, which only knows --quick and --time.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <utility>

#include <CLI/CLI.hpp>

namespace bench::cli {

constexpr int kExitUsage = 2;

// A usage error found after parsing (a required option missing, a value out of range).
[[noreturn]] inline void usage_error(const CLI::App& app, const std::string& message) {
    const std::string& name = app.get_name();
    std::fprintf(stderr, "%s: %s\nRun '%s --help' for the options.\n", name.c_str(), message.c_str(), name.c_str());
    std::exit(kExitUsage);
}

// Parses the command line or exits: 0 after --help, kExitUsage on any parse error.
inline void parse_or_exit(CLI::App& app, int argc, char** argv) {
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) std::exit(app.exit(e));  // --help: the help on stdout
        usage_error(app, e.what());
    }
}

// --quick and --time S: scripts/bench passes them to every benchmark it runs, so every
// benchmark accepts both, even one for which --time means nothing (`on_time` empty: the value
// is checked to be a number, then ignored). What they do is each program's; `quick_help` and
// `time_help` say it. The callbacks run as each option is met on the command line, so of two
// options that set the same thing (--quick and --time, --quick and --runs) the later one wins.
inline void add_run_length(CLI::App& app, std::function<void()> on_quick, const std::string& quick_help,
                           std::function<void(double)> on_time, const std::string& time_help) {
    app.add_flag_callback("--quick", std::move(on_quick), quick_help)->trigger_on_parse();
    app.add_option_function<double>(
           "--time",
           [on_time = std::move(on_time)](double seconds) {
               if (on_time) on_time(seconds);
           },
           time_help)
        ->type_name("S")
        ->trigger_on_parse();
}

}  // namespace bench::cli
