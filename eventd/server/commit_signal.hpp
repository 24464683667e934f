// Commit notifications for live streams (PSD-008 §8.7.3: writers signal completed commits,
// stream handlers wait on that signal; nothing polls).
//
//   writer thread            io thread (dispatch)              stream worker
//   notify(shard):           fd() readable →                   poll(socket, wake.fd())
//     flag[shard] = 1          read eventfd, take flags          take() → shards
//     eventfd += 1 (if the     for each subscriber:              LiveFeed::read_new(shard)
//     flag was clear)            wake.mark(shard)
//
// A writer only sets an atomic flag and, when it was clear, writes 8 bytes to a non-blocking
// eventfd: no lock, no allocation, no waiting on any client (§8.7.6 "streams MUST never stall
// or slow ingestion writes"). Fan-out to subscribers happens on the io thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "eventd/common/lock_order.hpp"
#include "base/result.hpp"

namespace eventd::server {

// One stream's wake-up: the shards committed since the stream last looked, and an eventfd
// its worker sleeps on (together with its socket).
class StreamWake {
public:
    // Errors: no eventfd (EMFILE/ENFILE when eventd is out of file descriptors). Called on a
    // query worker thread, so it returns the failure rather than throwing (no exception
    // leaves a thread).
    static base::Result<std::shared_ptr<StreamWake>> create(uint32_t shard_count);
    ~StreamWake();
    StreamWake(const StreamWake&) = delete;
    StreamWake& operator=(const StreamWake&) = delete;

    int fd() const { return fd_; }
    // Shard `shard` committed (dispatcher), then wake the worker.
    void mark(uint32_t shard);
    // Wake the worker without a shard (shutdown, policy reload).
    void wake();
    // The shards marked since the last take, in the order they were first marked; clears the
    // eventfd. Worker thread.
    std::vector<uint32_t> take();

private:
    StreamWake(int fd, uint32_t shard_count);

    int fd_ = -1;
    RankedMutex mutex_{LockRank::stream_wake};  // last in the lock order (eventd/lock_order.hpp)
    std::vector<uint32_t> pending_;
    std::vector<bool> marked_;
};

class CommitSignal {
public:
    // Errors: no eventfd (out of file descriptors).
    static base::Result<std::unique_ptr<CommitSignal>> create(uint32_t shard_count);
    ~CommitSignal();
    CommitSignal(const CommitSignal&) = delete;
    CommitSignal& operator=(const CommitSignal&) = delete;

    // WriterHooks::on_commit. Lock-free; any thread.
    void notify(uint32_t shard);

    // Readable after notify(); the dispatcher waits on it.
    int fd() const { return fd_; }
    // Clear the eventfd, take the flagged shards and mark them on every subscriber.
    void dispatch();

    // Wake every subscriber (shutdown, policy reload).
    void wake_all();

    void subscribe(std::shared_ptr<StreamWake> wake);
    void unsubscribe(const StreamWake* wake);
    uint32_t shard_count() const { return static_cast<uint32_t>(flags_.size()); }

private:
    CommitSignal(int fd, uint32_t shard_count);

    int fd_ = -1;
    // flags_[s] set by notify (seq_cst exchange) before its eventfd write; cleared by dispatch
    // (seq_cst exchange) after its eventfd read — so a notify either finds the flag still set
    // (dispatch has yet to take it) or writes the eventfd again.
    std::vector<std::atomic<bool>> flags_;
    // subscribers_: the io thread and stream workers, never a writer. Lock order
    // (eventd/lock_order.hpp): before a StreamWake's mutex_ (dispatch marks each subscriber under it).
    RankedMutex mutex_{LockRank::commit_subscribers};
    std::vector<std::shared_ptr<StreamWake>> subscribers_;
};

}  // namespace eventd::server
