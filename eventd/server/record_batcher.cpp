#include "eventd/server/record_batcher.hpp"

#include "eventd/query/record.hpp"
#include "msgpack/writer.hpp"
#include "protocol/wire.hpp"

namespace eventd::server {
namespace {

using json = nlohmann::json;

// The fixed head of a result frame: map of 2 (3 with a cursor, which the caller appends after
// the records), "status": "ok", "records": <array header>.
void put_result_head(std::vector<uint8_t>& out, size_t count, bool with_cursor) {
    static constexpr uint8_t kHead[] = {0x82, 0xa6, 's', 't', 'a', 't', 'u', 's', 0xa2, 'o',
                                        'k',  0xa7, 'r', 'e', 'c', 'o', 'r', 'd', 's'};
    out.insert(out.end(), std::begin(kHead), std::end(kHead));
    if (with_cursor) out[out.size() - sizeof kHead] = 0x83;
    if (count <= 15) {
        out.push_back(uint8_t(0x90 | count));
    } else if (count <= 0xffff) {
        out.insert(out.end(), {0xdc, uint8_t(count >> 8), uint8_t(count)});
    } else {
        out.insert(out.end(), {0xdd, uint8_t(count >> 24), uint8_t(count >> 16), uint8_t(count >> 8), uint8_t(count)});
    }
}

}  // namespace

void RecordBatcher::add(const json& record) {
    scratch_.clear();
    query::to_msgpack_float64(record, scratch_);
    add_encoded(scratch_);
}

void RecordBatcher::add_encoded(std::span<const uint8_t> record, std::optional<Stored> at) {
    // Cut before a record that would take the open batch past the target.
    if (count_ > 0 && records_.size() + record.size() > target_) seal();
    records_.insert(records_.end(), record.begin(), record.end());
    ++count_;
    if (at) advance(*at);  // the position after this record, for the frame that holds it
    if (records_.size() >= target_) seal();
}

std::vector<uint8_t> RecordBatcher::next_frame() {
    if (sealed_.empty()) return {};
    std::vector<uint8_t> frame = std::move(sealed_.front());
    sealed_.erase(sealed_.begin());
    return frame;
}

void RecordBatcher::flush() {
    if (count_ > 0) seal();
}

void RecordBatcher::flush_position() {
    if (count_ > 0 || position_) seal();
}

void RecordBatcher::seal() {
    std::vector<uint8_t> frame(protocol::kFrameHeaderBytes);
    frame.reserve(protocol::kFrameHeaderBytes + 24 + records_.size());
    put_result_head(frame, count_, position_.has_value());
    frame.insert(frame.end(), records_.begin(), records_.end());
    if (position_) {
        msgpack::put_string(frame, "cursor");
        msgpack::put_string(frame, cursor_key_->seal(*position_));
    }
    protocol::put_frame_length(frame, 0, static_cast<uint32_t>(frame.size() - protocol::kFrameHeaderBytes));
    sealed_.push_back(std::move(frame));
    records_.clear();
    count_ = 0;
}

}  // namespace eventd::server
