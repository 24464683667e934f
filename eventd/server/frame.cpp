#include "eventd/server/frame.hpp"

#include <cerrno>
#include <optional>

#include "eventd/query/record.hpp"
#include "msgpack/reader.hpp"
#include "msgpack/writer.hpp"

namespace eventd::server {
namespace {

using json = nlohmann::json;

void put_length(std::vector<uint8_t>& out, size_t at, uint32_t length) {
    out[at] = uint8_t(length);
    out[at + 1] = uint8_t(length >> 8);
    out[at + 2] = uint8_t(length >> 16);
    out[at + 3] = uint8_t(length >> 24);
}

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

// What the pairs of a request map said; the last of a repeated key counts.
struct RequestKeys {
    std::optional<std::string> query;  // nullopt: absent or not a string
    std::optional<std::string> after;
    bool after_not_string = false;
    std::optional<bool> allow_gap;
    bool allow_gap_not_bool = false;
};

// A string value into `out` (or mark it as the wrong type, skipping the value).
base::Status read_string_value(msgpack::Reader& in, std::optional<std::string>& out, bool& wrong_type) {
    out.reset();
    wrong_type = !in.next_is_string();
    if (wrong_type) return in.skip(1);
    auto text = in.string();
    if (!text) return text.error();
    out = std::string(text.value());
    return {};
}

// The pairs of a request map; every value is checked and depth-bounded by the reader, the
// values of unknown keys skipped.
base::Status read_request_map(msgpack::Reader& in, RequestKeys& keys) {
    auto pairs = in.map_header();
    if (!pairs) return pairs.error();
    if (auto st = in.check_depth(1); !st) return st;
    for (uint32_t i = 0; i < pairs.value(); ++i) {
        auto key = in.string();
        if (!key) return key.error();
        base::Status st;
        bool ignored = false;
        if (key.value() == "query") {
            st = read_string_value(in, keys.query, ignored);
        } else if (key.value() == "after") {
            st = read_string_value(in, keys.after, keys.after_not_string);
        } else if (key.value() == "allow_gap") {
            keys.allow_gap.reset();
            keys.allow_gap_not_bool = !in.next_is_bool();
            if (keys.allow_gap_not_bool) {
                st = in.skip(1);
            } else if (auto item = in.next(); item) {
                keys.allow_gap = item->boolean;
            } else {
                st = item.error();
            }
        } else {
            st = in.skip(1);
        }
        if (!st) return st;
    }
    return {};
}

}  // namespace

uint32_t frame_length(std::span<const uint8_t, kFrameHeaderBytes> h) {
    return uint32_t(h[0]) | uint32_t(h[1]) << 8 | uint32_t(h[2]) << 16 | uint32_t(h[3]) << 24;
}

std::vector<uint8_t> encode_frame(const json& body) {
    std::vector<uint8_t> out(kFrameHeaderBytes);
    query::to_msgpack_float64(body, out);
    put_length(out, 0, static_cast<uint32_t>(out.size() - kFrameHeaderBytes));
    return out;
}

std::vector<uint8_t> error_frame(const std::string& message) {
    return encode_frame(json{{"status", "error"}, {"error", message}});
}
std::vector<uint8_t> end_frame() { return encode_frame(json{{"status", "end"}}); }
std::vector<uint8_t> watch_frame() { return encode_frame(json{{"status", "watch"}}); }
std::vector<uint8_t> watch_frame(const std::string& cursor) {
    return encode_frame(json{{"status", "watch"}, {"cursor", cursor}});
}
std::vector<uint8_t> end_frame(const std::string& cursor) {
    return encode_frame(json{{"status", "end"}, {"cursor", cursor}});
}
std::vector<uint8_t> gap_frame(std::optional<uint64_t> lost, const std::string& detail) {
    return encode_frame(json{{"status", "gap"}, {"lost", lost ? json(*lost) : json(nullptr)}, {"detail", detail}});
}

std::string oversized_request_message(uint64_t length, uint32_t max_bytes) {
    return "request of " + std::to_string(length) + " bytes exceeds " + std::to_string(max_bytes) +
           " (MaxQueryMessageBytes)";
}

base::Result<Request> decode_request(std::span<const uint8_t> body) {
    msgpack::Reader in(body, kRequestMaxDepth);
    RequestKeys keys;
    const bool top_is_map = in.next_is_map();
    // A request that is not a map is still read to its end: invalid or too deep bytes say so.
    const base::Status walked = top_is_map ? read_request_map(in, keys) : in.skip();
    if (!walked && msgpack::is_too_deep(walked.error()))
        return base::Error{EINVAL, "request nests deeper than " + std::to_string(kRequestMaxDepth) + " levels"};
    if (!walked || !in.at_end()) return base::Error{EINVAL, "request is not valid msgpack"};
    if (!top_is_map || !keys.query) return base::Error{EINVAL, "request must be a map with a string 'query'"};
    if (keys.after_not_string) return base::Error{EINVAL, "request key 'after' must be a cursor string"};
    if (keys.allow_gap_not_bool) return base::Error{EINVAL, "request key 'allow_gap' must be true or false"};
    return Request{std::move(*keys.query), std::move(keys.after), keys.allow_gap.value_or(false)};
}

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
    std::vector<uint8_t> frame(kFrameHeaderBytes);
    frame.reserve(kFrameHeaderBytes + 24 + records_.size());
    put_result_head(frame, count_, position_.has_value());
    frame.insert(frame.end(), records_.begin(), records_.end());
    if (position_) {
        msgpack::put_string(frame, "cursor");
        msgpack::put_string(frame, cursor_key_->seal(*position_));
    }
    put_length(frame, 0, static_cast<uint32_t>(frame.size() - kFrameHeaderBytes));
    sealed_.push_back(std::move(frame));
    records_.clear();
    count_ = 0;
}

}  // namespace eventd::server
