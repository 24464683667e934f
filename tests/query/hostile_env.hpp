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

#include "sanitizers.hpp"
#include "support/accounting.hpp"
#include "support/daemon_process.hpp"
#include "support/query_env.hpp"

namespace eventd::query_it {

// Resident memory may stay above the baseline after an attack without anything leaking:
// glibc keeps freed memory in its per-thread arenas (every query runs on its own thread, and
// a thread's arena is reused, not returned), and SQLite's page caches of the read connections
// touched pages that stay mapped. 32 MiB is above what 1000 connections and a few hundred
// queries leave behind here (measured: at most a few MiB) and far below a per-connection leak
// or a 4 GiB allocation.
// Under AddressSanitizer freed memory waits in its quarantine (up to 256 MiB) before reuse, so
// resident memory grows by what the attack allocated and freed (58–84 MiB measured); leaks are
// LeakSanitizer's to find there (detect_leaks=1 when each daemon exits).
#if TEST_UNDER_ASAN
inline constexpr uint64_t kRssSlackKib = 320 * 1024;
#else
inline constexpr uint64_t kRssSlackKib = 32 * 1024;
#endif

// A well-behaved query on a fresh raw connection still works: EVENTS app.login COUNT gives
// the fixture's 10.
void check_still_serving(const std::string& socket);

class HostileEnv {
public:
    // The QueryEnv with the generator at a modest rate, a first query answered, the baseline taken.
    explicit HostileEnv(EnvOptions options = {});
    ~HostileEnv();

    QueryEnv& env() { return *env_; }
    const std::string& socket() const { return socket_; }
    pid_t eventd_pid() { return env_->eventd().pid(); }
    const kmes::it::ProcessUsage& eventd_baseline() const { return eventd_base_; }

    void check_still_serving() { query_it::check_still_serving(socket_); }
    // The end of every hostile case (see the top of this file). `concurrent_readers`: how many
    // queries of the case read the store at the same time (see retained_shard_fds).
    void check_recovered(size_t concurrent_readers = 1);

private:
    std::unique_ptr<QueryEnv> env_;
    std::string socket_;
    std::unique_ptr<eventd::it::RingWatch> watch_;
    kmes::it::ProcessUsage eventd_base_;
    size_t eventd_base_retained_ = 0;
    kmes::it::ProcessUsage shim_base_;
};

// Descriptors of `pid` on active shard files (shard-NNNN.db itself, not -wal/-shm) that SQLite
// keeps after a read connection closed. SQLite's unix VFS must not close() a file while another
// connection of the process holds a POSIX lock on it (closing would drop that lock), and a
// shard's writer always holds one in WAL mode: the descriptor is parked, and the next read
// connection of that file reuses it. So eventd keeps, per active shard, as many of these as
// queries ever read that shard at the same time — a high-water mark, reused, never growing
// with the number of queries. Counted apart from the exact descriptor baseline.
size_t retained_shard_fds(pid_t pid);

// The count of one `EVENTS … COUNT` query on a raw connection; -1 when it fails.
int64_t wire_count(const std::string& socket, const std::string& query);

}  // namespace eventd::query_it
