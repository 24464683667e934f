// A query environment under attack (issue 11, docs/RELIABILITY.md "Hostile clients and
// resource exhaustion"): a QueryEnv whose kmes-shimd generator emits `hostile.tick` events on
// every ring throughout (ingestion must go on whatever the clients do), what eventd and
// kmes-shimd hold before the attack, and the checks every hostile case ends with:
//
//   both daemons alive; their descriptors and threads back to the baseline exactly, resident
//   memory within kRssSlackKib of it; a well-behaved query still answered; then emission
//   stopped and the store audited exactly (every emitted sequence stored once, no gap).
#pragma once

#include <memory>

#include "accounting.hpp"
#include "daemon_process.hpp"
#include "query_env.hpp"

namespace eventd::query_it {

// Resident memory may stay above the baseline after an attack without anything leaking:
// glibc keeps freed memory in its per-thread arenas (every query runs on its own thread, and
// a thread's arena is reused, not returned), and SQLite's page caches of the read connections
// touched pages that stay mapped. 32 MiB is above what 1000 connections and a few hundred
// queries leave behind here (measured: at most a few MiB) and far below a per-connection leak
// or a 4 GiB allocation.
inline constexpr uint64_t kRssSlackKib = 32 * 1024;

class HostileEnv {
public:
    // The QueryEnv with the generator at a modest rate, a first query answered, the baseline taken.
    explicit HostileEnv(EnvOptions options = {});
    ~HostileEnv();

    QueryEnv& env() { return *env_; }
    const std::string& socket() const { return socket_; }
    pid_t eventd_pid() { return env_->eventd().pid(); }
    const kmes::it::ProcessUsage& eventd_baseline() const { return eventd_base_; }

    // EVENTS app.login COUNT on a fresh raw connection gives the fixture's 10.
    void check_still_serving();
    // The end of every hostile case (see the top of this file).
    void check_recovered();

private:
    std::unique_ptr<QueryEnv> env_;
    std::string socket_;
    std::unique_ptr<eventd::it::RingWatch> watch_;
    kmes::it::ProcessUsage eventd_base_;
    kmes::it::ProcessUsage shim_base_;
};

// The count of one `EVENTS … COUNT` query on a raw connection; -1 when it fails.
int64_t wire_count(const std::string& socket, const std::string& query);

}  // namespace eventd::query_it
