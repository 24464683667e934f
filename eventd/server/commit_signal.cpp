#include "eventd/server/commit_signal.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include "base/sync_point.hpp"

namespace eventd::server {
namespace {

base::Result<int> make_eventfd(const char* what) {
    const int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd >= 0) return fd;
    const int code = errno;
    std::string message = std::string("cannot create the eventfd of ") + what;
    if (code == EMFILE || code == ENFILE)
        message += " (eventd is out of file descriptors: raise LimitNOFILE or close idle query connections)";
    return base::errno_error(code, message);
}

void bump(int fd) {
    const uint64_t one = 1;
    // Non-blocking; it can only fail when the counter is near 2^64, i.e. never.
    (void)!write(fd, &one, sizeof one);
}

void drain(int fd) {
    uint64_t value;
    (void)!read(fd, &value, sizeof value);
}

}  // namespace

base::Result<std::shared_ptr<StreamWake>> StreamWake::create(uint32_t shard_count) {
    auto fd = make_eventfd("a stream's wake-up");
    if (!fd) return fd.error();
    // Not make_shared: the constructor is private to this factory.
    return std::shared_ptr<StreamWake>(new StreamWake(*fd, shard_count));
}

StreamWake::StreamWake(int fd, uint32_t shard_count) : fd_(fd), marked_(shard_count, false) {}

StreamWake::~StreamWake() { close(fd_); }

void StreamWake::mark(uint32_t shard) {
    {
        std::lock_guard lock(mutex_);
        if (shard >= marked_.size()) marked_.resize(shard + 1, false);
        if (!marked_[shard]) {
            marked_[shard] = true;
            pending_.push_back(shard);
        }
    }
    bump(fd_);
}

void StreamWake::wake() { bump(fd_); }

std::vector<uint32_t> StreamWake::take() {
    drain(fd_);
    std::lock_guard lock(mutex_);
    std::vector<uint32_t> out;
    out.swap(pending_);
    for (uint32_t s : out) marked_[s] = false;
    return out;
}

base::Result<std::unique_ptr<CommitSignal>> CommitSignal::create(uint32_t shard_count) {
    auto fd = make_eventfd("the commit signal");
    if (!fd) return fd.error();
    return std::unique_ptr<CommitSignal>(new CommitSignal(*fd, shard_count));
}

CommitSignal::CommitSignal(int fd, uint32_t shard_count) : fd_(fd), flags_(shard_count) {}

CommitSignal::~CommitSignal() { close(fd_); }

void CommitSignal::notify(uint32_t shard) {
    if (shard >= flags_.size()) return;
    if (!flags_[shard].exchange(true)) bump(fd_);
}

void CommitSignal::dispatch() {
    drain(fd_);
    KMES_SYNC_POINT("CommitSignal::dispatch:after_drain");  // a writer's notify can land here
    std::vector<uint32_t> committed;
    for (uint32_t s = 0; s < flags_.size(); ++s)
        if (flags_[s].exchange(false)) committed.push_back(s);
    if (committed.empty()) return;
    std::lock_guard lock(mutex_);
    for (const auto& wake : subscribers_)
        for (uint32_t s : committed) wake->mark(s);
}

void CommitSignal::wake_all() {
    std::lock_guard lock(mutex_);
    for (const auto& wake : subscribers_) wake->wake();
}

void CommitSignal::subscribe(std::shared_ptr<StreamWake> wake) {
    std::lock_guard lock(mutex_);
    subscribers_.push_back(std::move(wake));
}

void CommitSignal::unsubscribe(const StreamWake* wake) {
    std::lock_guard lock(mutex_);
    std::erase_if(subscribers_, [&](const auto& w) { return w.get() == wake; });
}

}  // namespace eventd::server
