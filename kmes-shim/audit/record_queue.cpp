#include "record_queue.hpp"

#include <libaudit.h>
#include <linux/netlink.h>

namespace kmes::audit {

bool is_audit_record(uint16_t type) {
    if (type == NLMSG_ERROR || type == NLMSG_DONE) return false;
    return type >= AUDIT_FIRST_USER_MSG || type == AUDIT_USER;
}

void RecordRound::add(uint16_t type, std::string_view payload) {
    messages_.push_back(Message{type, bytes_.size(), payload.size()});
    bytes_.insert(bytes_.end(), payload.begin(), payload.end());
    if (is_audit_record(type)) ++records_;
}

void RecordQueue::push(RecordRound round) {
    {
        std::lock_guard lock(mutex_);
        if (!rounds_.empty() && queued_bytes_ + round.bytes() > limit_bytes_) {
            dropped_ += round.records();
            // The control replies stay: the kernel's `lost` counter comes in AUDIT_GET replies.
            RecordRound control;
            for (const auto& m : round.messages())
                if (!is_audit_record(m.type)) control.add(m.type, round.payload(m));
            if (control.empty()) return;
            round = std::move(control);
        }
        queued_bytes_ += round.bytes();
        rounds_.push_back(std::move(round));
    }
    ready_.notify_one();
}

void RecordQueue::close() {
    {
        std::lock_guard lock(mutex_);
        closed_ = true;
    }
    ready_.notify_one();
}

bool RecordQueue::pop(std::vector<RecordRound>& out, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    ready_.wait_for(lock, timeout, [&] { return !rounds_.empty() || closed_; });
    if (rounds_.empty()) return !closed_;
    for (RecordRound& round : rounds_) out.push_back(std::move(round));
    rounds_.clear();
    queued_bytes_ = 0;
    return true;
}

uint64_t RecordQueue::take_dropped() {
    std::lock_guard lock(mutex_);
    const uint64_t dropped = dropped_;
    dropped_ = 0;
    return dropped;
}

}  // namespace kmes::audit
