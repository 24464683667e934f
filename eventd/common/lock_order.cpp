#include "eventd/common/lock_order.hpp"

#include <cstdio>
#include <cstdlib>

namespace eventd {

const char* lock_rank_name(LockRank rank) {
    switch (rank) {
        case LockRank::config:
            return "config (Daemon::config_mutex_)";
        case LockRank::retention:
            return "retention (RetentionThread::mutex_)";
        case LockRank::shard_db:
            return "shard_db (ShardWriter::db_mutex_)";
        case LockRank::urgent:
            return "urgent (ShardWriter::urgent_mutex_)";
        case LockRank::commit_subscribers:
            return "commit_subscribers (CommitSignal::mutex_)";
        case LockRank::stream_wake:
            return "stream_wake (StreamWake::mutex_)";
        case LockRank::index_policy:
            return "index_policy (index::PolicyThread::mutex_)";
        case LockRank::field_counter:
            return "field_counter (index::FieldCounter::mutex_)";
    }
    return "unknown";
}

#ifndef NDEBUG
namespace lock_order {
namespace {
// The ranks this thread holds, in acquisition order. Per thread, so no synchronisation; a
// handful at most (the table in lock_order.hpp has eight ranks).
struct Held {
    LockRank ranks[16];
    int count = 0;
};
thread_local Held held;
}  // namespace

void will_acquire(LockRank rank) {
    for (int i = 0; i < held.count; ++i) {
        if (held.ranks[i] >= rank) {
            std::fprintf(
                stderr,
                "eventd: lock order violation: acquiring %s while holding %s (docs/ARCHITECTURE.md \"Lock order\")\n",
                lock_rank_name(rank), lock_rank_name(held.ranks[i]));
            std::abort();
        }
    }
    if (held.count == int(sizeof held.ranks / sizeof held.ranks[0])) std::abort();  // cannot happen with eight ranks
    held.ranks[held.count++] = rank;
}

void released(LockRank rank) {
    // Usually the last one; unique_lock may release out of order.
    for (int i = held.count - 1; i >= 0; --i) {
        if (held.ranks[i] != rank) continue;
        for (int j = i; j + 1 < held.count; ++j) held.ranks[j] = held.ranks[j + 1];
        --held.count;
        return;
    }
}
}  // namespace lock_order
#endif

}  // namespace eventd
