#include "forward/packer.hpp"

#include <algorithm>
#include <limits>

#include "base/fnv1a.hpp"
#include "msgpack/writer.hpp"

namespace eventd::forward {
namespace {

// Room kept in front of a packed body for its array header (at most 5 bytes: array 32), written
// once the count is known.
constexpr size_t kArrayHeaderRoom = 5;

}  // namespace

base::Status Packer::add(const RecordKeys& keys, std::span<const uint8_t> record, Clock::time_point now) {
    if (limits_.max_records <= 1) {  // no packing: the record is the body, as before packing
        PackedMessage single{keys.event_type, keys.boot_id, message_id(keys, record),
                             std::vector<uint8_t>(record.begin(), record.end()), 1};
        return sink_.publish(single);
    }
    auto it = std::find_if(open_.begin(), open_.end(), [&](const Open& o) { return o.message.event_type == keys.event_type; });
    if (it != open_.end() &&
        (it->message.boot_id != keys.boot_id || it->message.body.size() + record.size() > limits_.max_bytes)) {
        if (auto st = hand_over(static_cast<size_t>(it - open_.begin())); !st) return st;
        it = open_.end();
    }
    if (it == open_.end()) {
        if (open_.size() >= kMaxOpenMessages)
            if (auto st = hand_over(0); !st) return st;
        Open o;
        o.number = next_number_++;
        o.opened = now;
        o.message.event_type = keys.event_type;
        o.message.boot_id = keys.boot_id;
        o.message.body.reserve(std::min<size_t>(limits_.max_bytes, 64 * 1024));
        o.message.body.resize(kArrayHeaderRoom);
        o.ids_hash = base::kFnv1aOffsetBasis;
        open_.push_back(std::move(o));
        it = open_.end() - 1;
    }
    Open& o = *it;
    o.message.body.insert(o.message.body.end(), record.begin(), record.end());
    ++o.message.records;
    o.last_id = message_id(keys, record);
    if (o.message.records == 1) o.first_id = o.last_id;
    o.ids_hash = base::fnv1a64(base::fnv1a64(o.ids_hash, o.last_id), "\n");
    if (o.message.records >= limits_.max_records) return hand_over(static_cast<size_t>(it - open_.begin()));
    return {};
}

base::Status Packer::hand_over(size_t index) {
    Open o = std::move(open_[index]);
    open_.erase(open_.begin() + static_cast<std::ptrdiff_t>(index));
    PackedMessage& m = o.message;
    std::vector<uint8_t> header;
    msgpack::put_array_header(header, m.records);
    const size_t skip = kArrayHeaderRoom - header.size();
    std::copy(header.begin(), header.end(), m.body.begin() + static_cast<std::ptrdiff_t>(skip));
    m.body.erase(m.body.begin(), m.body.begin() + static_cast<std::ptrdiff_t>(skip));
    m.msg_id = m.records == 1 ? o.first_id
                              : o.first_id + "~" + o.last_id + "/" + std::to_string(m.records) + ":" + hex64(o.ids_hash);
    auto st = sink_.publish(m);
    if (st) release_checkpoints();
    return st;
}

void Packer::cursor(const std::string& cursor, int64_t newest_event_ns) {
    PersistPoint point{cursor, newest_event_ns};
    if (open_.empty() && waiting_.empty()) return sink_.checkpoint(point);
    // Ready once every message open now (numbers up to the newest) has been handed over.
    waiting_.emplace_back(open_.empty() ? 0 : open_.back().number, std::move(point));
    release_checkpoints();
}

void Packer::release_checkpoints() {
    // open_ is in opening order: its front is the oldest message still open.
    const uint64_t oldest_open = open_.empty() ? std::numeric_limits<uint64_t>::max() : open_.front().number;
    while (!waiting_.empty() && waiting_.front().first < oldest_open) {
        sink_.checkpoint(waiting_.front().second);
        waiting_.pop_front();
    }
}

base::Status Packer::flush_due(Clock::time_point now) {
    while (!open_.empty() && open_.front().opened + limits_.max_delay <= now)
        if (auto st = hand_over(0); !st) return st;
    return {};
}

base::Status Packer::flush_all() {
    while (!open_.empty())
        if (auto st = hand_over(0); !st) return st;
    return {};
}

Packer::Clock::time_point Packer::next_due() const {
    return open_.empty() ? Clock::time_point::max() : open_.front().opened + limits_.max_delay;
}

}  // namespace eventd::forward
