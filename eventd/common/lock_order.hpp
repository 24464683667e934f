// eventd's lock order, written down and checked (STYLE.md "Lock order is written where the
// mutex is declared"). A thread may only acquire a ranked mutex whose rank is higher than the
// rank of every ranked mutex it already holds; two mutexes of the same rank (two shards'
// db_mutex_) are never held together. A cycle — the only way two of these locks can deadlock
// — therefore cannot form.
//
//   rank                     mutex                                   held while taking
//   10 config                Daemon::config_mutex_                   retention, urgent (reload)
//   20 retention             RetentionThread::mutex_                 —
//   30 shard_db              ShardWriter::db_mutex_ (whole txn, or   urgent (own), Handoff (leaf)
//                            one index statement)
//   40 urgent                ShardWriter::urgent_mutex_              —
//   50 commit_subscribers    CommitSignal::mutex_                    stream_wake (dispatch)
//   60 stream_wake           StreamWake::mutex_                      —
//   70 index_policy          index::PolicyThread::mutex_             —
//   80 field_counter         index::FieldCounter::mutex_             —
//
// reload() holds config_mutex_ (10) while it hands new settings to the policy thread (70).
//
// Unranked mutexes (Handoff::mutex_, PolicyHolder, index::DesiredSetHolder,
// ShardIndexMaintenance::status_mutex_, the collector's pending_mutex_, state_mutex_ and
// wake_mutex_, the rates and failure mutexes, the query server's workers_mutex) are leaves:
// nothing is locked while one is held.
//
// Consequences that the code keeps:
// - A writer reports a failed commit (WriterHooks::on_storage_error, which posts to another
//   writer's urgent queue and takes the retention mutex) and settles a source's receipts
//   (RedeliveringSource::settled: the collector's pending_mutex_) only after releasing its
//   db_mutex_. Under db_mutex_ runs only the shard's own work — and a redelivering source's
//   duplicate check, which reads that shard's connection and takes no lock.
// - Retention takes one shard's db_mutex_ per batch and nothing else meanwhile, and never
//   holds its own mutex while it runs.
//
// Checked in debug builds: RankedMutex asserts the rule per thread (and aborts naming both
// locks); with NDEBUG it is a plain std::mutex.
#pragma once

#include <cstdint>
#include <mutex>

namespace eventd {

enum class LockRank : uint8_t {
    config = 10,
    retention = 20,
    shard_db = 30,
    urgent = 40,
    commit_subscribers = 50,
    stream_wake = 60,
    index_policy = 70,
    field_counter = 80,
};

const char* lock_rank_name(LockRank rank);

#ifndef NDEBUG
namespace lock_order {
// Record that this thread takes `rank`; aborts with both names if it holds an equal or higher one.
void will_acquire(LockRank rank);
void released(LockRank rank);
}  // namespace lock_order

// A std::mutex with a rank (BasicLockable + Lockable: lock_guard, unique_lock and
// std::condition_variable_any work with it).
class RankedMutex {
public:
    explicit RankedMutex(LockRank rank) : rank_(rank) {}
    RankedMutex(const RankedMutex&) = delete;
    RankedMutex& operator=(const RankedMutex&) = delete;

    void lock() {
        lock_order::will_acquire(
            rank_);  // before blocking: a wrong order is reported even when it happens not to deadlock
        mutex_.lock();
    }
    bool try_lock() {
        lock_order::will_acquire(rank_);
        if (mutex_.try_lock()) return true;
        lock_order::released(rank_);
        return false;
    }
    void unlock() {
        mutex_.unlock();
        lock_order::released(rank_);
    }

private:
    std::mutex mutex_;
    LockRank rank_;
};
#else
class RankedMutex {
public:
    explicit RankedMutex(LockRank) {}
    RankedMutex(const RankedMutex&) = delete;
    RankedMutex& operator=(const RankedMutex&) = delete;
    void lock() { mutex_.lock(); }
    bool try_lock() { return mutex_.try_lock(); }
    void unlock() { mutex_.unlock(); }

private:
    std::mutex mutex_;
};
#endif

}  // namespace eventd
