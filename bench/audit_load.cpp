// Load for the audit benchmark (bench/audit_bench.sh, docs/PERFORMANCE.md §14): the audited
// work itself, cheap and paced, so that what the benchmark measures is the audit daemons.
//
//   kmes-bench-audit-load execs --rate R --seconds S --arg MARKER [--program /bin/true]
//       fork+exec PROGRAM MARKER (posix_spawn) R times a second for S seconds, children reaped as
//       they exit (at most 256 alive). --rate 0: as fast as the machine allows — one closed loop
//       of spawn-and-wait per CPU (--workers).
//   kmes-bench-audit-load syscalls --count N [--rate R] [--spawn-every K -- COMMAND...]
//       uname(2) N times (R a second; 0 = unpaced); every K calls, COMMAND is spawned without
//       waiting for it (a few hundred other executions spread over the run).
//
// Each prints one JSON line on stdout: what was done, in how long, the achieved rate.
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cli.hpp"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kMaxChildren = 256;  // paced execs: children alive at once before the loop waits

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// COMMAND[0] is looked up in PATH when it has no slash. The first failure is said on stderr.
pid_t spawn(const std::vector<std::string>& command) {
    std::vector<char*> argv;
    for (const std::string& word : command) argv.push_back(const_cast<char*>(word.c_str()));
    argv.push_back(nullptr);
    pid_t pid = -1;
    const int rc = posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ);
    if (rc == 0) return pid;
    static std::atomic<bool> said{false};
    if (!said.exchange(true)) std::fprintf(stderr, "kmes-bench-audit-load: %s: %s\n", argv[0], std::strerror(rc));
    return -1;
}

// Sleeps until `due` (a schedule's next slot) unless it has passed; a schedule that has
// fallen more than `slack` behind restarts from now instead of bursting to catch up.
void wait_for_slot(Clock::time_point& due, Clock::duration period, Clock::duration slack) {
    const auto now = Clock::now();
    if (due > now) std::this_thread::sleep_until(due);
    if (now - due > slack) due = now;
    due += period;
}

struct ExecOptions {
    double rate = 1000;
    double seconds = 10;
    std::string program = "/bin/true";
    std::string arg;
    unsigned workers = std::max(1u, std::thread::hardware_concurrency());
};

int run_execs(const ExecOptions& o) {
    const std::vector<std::string> command{o.program, o.arg};
    std::atomic<uint64_t> execs{0}, failed{0};
    const auto start = Clock::now();
    const auto end = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.seconds));
    if (o.rate <= 0) {
        // As fast as possible: each worker spawns and waits, so at most `workers` run at once.
        std::vector<std::thread> workers;
        for (unsigned w = 0; w < o.workers; ++w)
            workers.emplace_back([&] {
                while (Clock::now() < end) {
                    const pid_t pid = spawn(command);
                    if (pid < 0) {
                        ++failed;
                        continue;
                    }
                    int status = 0;
                    waitpid(pid, &status, 0);
                    ++(WIFEXITED(status) && WEXITSTATUS(status) == 0 ? execs : failed);
                }
            });
        for (std::thread& t : workers) t.join();
    } else {
        const auto period = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(1.0 / o.rate));
        auto due = start;
        int alive = 0;
        auto reap = [&](int flags) {
            int status = 0;
            pid_t pid;
            while ((pid = waitpid(-1, &status, flags)) > 0) {
                --alive;
                ++(WIFEXITED(status) && WEXITSTATUS(status) == 0 ? execs : failed);
                flags |= WNOHANG;  // one blocking wait at most, then whatever else has exited
            }
        };
        while (Clock::now() < end) {
            wait_for_slot(due, period, std::chrono::milliseconds(50));
            if (spawn(command) < 0) {
                ++failed;
                continue;
            }
            ++alive;
            reap(alive >= kMaxChildren ? 0 : WNOHANG);
        }
        while (alive > 0) reap(0);
    }
    const double took = seconds_since(start);
    std::printf("{\"execs\": %llu, \"failed\": %llu, \"seconds\": %.3f, \"rate\": %.1f, \"target\": %.0f}\n",
                static_cast<unsigned long long>(execs.load()), static_cast<unsigned long long>(failed.load()), took,
                static_cast<double>(execs.load()) / took, o.rate);
    return failed.load() == 0 ? 0 : 1;
}

struct SyscallOptions {
    uint64_t count = 1'000'000;
    double rate = 0;
    uint64_t spawn_every = 0;
    std::vector<std::string> command;
};

int run_syscalls(const SyscallOptions& o) {
    // The spawned commands are not waited for: the kernel reaps them.
    signal(SIGCHLD, SIG_IGN);
    const auto start = Clock::now();
    // Paced in steps of 1 ms: each step makes the calls the schedule says are due by then.
    const auto step = std::chrono::milliseconds(1);
    auto due = start;
    uint64_t done = 0, spawned = 0, spawn_failed = 0;
    utsname u{};
    while (done < o.count) {
        uint64_t target = o.count;
        if (o.rate > 0) {
            wait_for_slot(due, step, std::chrono::milliseconds(50));
            target = std::min<uint64_t>(o.count, static_cast<uint64_t>(seconds_since(start) * o.rate) + 1);
        }
        for (; done < target; ++done) {
            uname(&u);
            if (o.spawn_every && done % o.spawn_every == o.spawn_every / 2) {
                if (spawn(o.command) < 0)
                    ++spawn_failed;
                else
                    ++spawned;
            }
        }
    }
    const double took = seconds_since(start);
    std::printf("{\"calls\": %llu, \"spawned\": %llu, \"spawn_failed\": %llu, \"seconds\": %.3f, \"rate\": %.1f}\n",
                static_cast<unsigned long long>(done), static_cast<unsigned long long>(spawned),
                static_cast<unsigned long long>(spawn_failed), took, static_cast<double>(done) / took);
    return spawn_failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Audited work for bench/audit_bench.sh: paced executions, or a loop of uname(2)",
                 "kmes-bench-audit-load"};
    app.set_version_flag("--version", "kmes-bench-audit-load (eventd benchmarks)");
    app.require_subcommand(0, 1);

    ExecOptions e;
    CLI::App* execs = app.add_subcommand("execs", "fork+exec PROGRAM ARG at a rate; prints the achieved rate");
    execs->add_option("--rate", e.rate, "executions a second; 0: as fast as possible (closed loops)")
        ->check(CLI::NonNegativeNumber);
    execs->add_option("--seconds", e.seconds, "how long")->check(CLI::PositiveNumber);
    execs->add_option("--program", e.program, "what to execute (an absolute path)");
    execs->add_option("--arg", e.arg, "its one argument (a marker to find the executions by)")->required();
    execs->add_option("--workers", e.workers, "--rate 0: closed loops of spawn and wait")->check(CLI::Range(1, 64));

    SyscallOptions s;
    CLI::App* syscalls = app.add_subcommand("syscalls", "uname(2) in a loop, spawning COMMAND every K calls");
    syscalls->add_option("--count", s.count, "calls")->check(CLI::PositiveNumber);
    syscalls->add_option("--rate", s.rate, "calls a second; 0: unpaced")->check(CLI::NonNegativeNumber);
    syscalls->add_option("--spawn-every", s.spawn_every, "spawn COMMAND every K calls (0: never)");
    syscalls->add_option("command", s.command, "the command to spawn (after --)");

    bench::cli::parse_or_exit(app, argc, argv);
    if (!execs->parsed() && !syscalls->parsed()) bench::cli::usage_error(app, "name a subcommand: execs or syscalls");
    if (execs->parsed()) return run_execs(e);
    if (s.spawn_every && s.command.empty()) bench::cli::usage_error(app, "--spawn-every needs a COMMAND after --");
    return run_syscalls(s);
}
