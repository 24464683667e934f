#include "eventd/server/frame.hpp"

#include <cerrno>
#include <optional>

#include "eventd/query/record.hpp"
#include "msgpack/reader.hpp"

namespace eventd::server {
namespace {

using json = nlohmann::json;

void put_length(std::vector<uint8_t>& out, size_t at, uint32_t length) {
    out[at] = uint8_t(length);
    out[at + 1] = uint8_t(length >> 8);
    out[at + 2] = uint8_t(length >> 16);
    out[at + 3] = uint8_t(length >> 24);
}

// The fixed head of a result frame: map of 2, "status": "ok", "records": <array header>.
void put_result_head(std::vector<uint8_t>& out, size_t count) {
    static constexpr uint8_t kHead[] = {0x82, 0xa6, 's', 't', 'a', 't', 'u', 's', 0xa2, 'o',
                                        'k',  0xa7, 'r', 'e', 'c', 'o', 'r', 'd', 's'};
    out.insert(out.end(), std::begin(kHead), std::end(kHead));
    if (count <= 15) {
        out.push_back(uint8_t(0x90 | count));
    } else if (count <= 0xffff) {
        out.insert(out.end(), {0xdc, uint8_t(count >> 8), uint8_t(count)});
    } else {
        out.insert(out.end(), {0xdd, uint8_t(count >> 24), uint8_t(count >> 16), uint8_t(count >> 8), uint8_t(count)});
    }
}

// The pairs of a request map: the last "query" key counts, and it must hold a string; every
// other value is skipped, checked and depth-bounded by the reader.
kmes::Status read_request_map(msgpack::Reader& in, std::optional<std::string>& query) {
    auto pairs = in.map_header();
    if (!pairs) return pairs.error();
    if (auto st = in.check_depth(1); !st) return st;
    for (uint32_t i = 0; i < pairs.value(); ++i) {
        auto key = in.string();
        if (!key) return key.error();
        if (key.value() != "query") {
            if (auto st = in.skip(1); !st) return st;
            continue;
        }
        query.reset();
        if (!in.next_is_string()) {
            if (auto st = in.skip(1); !st) return st;
            continue;
        }
        auto text = in.string();
        if (!text) return text.error();
        query = std::string(text.value());
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

std::string oversized_request_message(uint64_t length, uint32_t max_bytes) {
    return "request of " + std::to_string(length) + " bytes exceeds " + std::to_string(max_bytes) +
           " (MaxQueryMessageBytes)";
}

kmes::Result<std::string> decode_request(std::span<const uint8_t> body) {
    msgpack::Reader in(body, kRequestMaxDepth);
    std::optional<std::string> query;
    const bool top_is_map = in.next_is_map();
    // A request that is not a map is still read to its end: invalid or too deep bytes say so.
    const kmes::Status walked = top_is_map ? read_request_map(in, query) : in.skip();
    if (!walked && msgpack::is_too_deep(walked.error()))
        return kmes::Error{EINVAL, "request nests deeper than " + std::to_string(kRequestMaxDepth) + " levels"};
    if (!walked || !in.at_end()) return kmes::Error{EINVAL, "request is not valid msgpack"};
    if (!top_is_map || !query) return kmes::Error{EINVAL, "request must be a map with a string 'query'"};
    return std::move(*query);
}

void RecordBatcher::add(const json& record) {
    scratch_.clear();
    query::to_msgpack_float64(record, scratch_);
    add_encoded(scratch_);
}

void RecordBatcher::add_encoded(std::span<const uint8_t> record) {
    // Cut before a record that would take the open batch past the target.
    if (count_ > 0 && records_.size() + record.size() > target_) seal();
    records_.insert(records_.end(), record.begin(), record.end());
    ++count_;
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

void RecordBatcher::seal() {
    std::vector<uint8_t> frame(kFrameHeaderBytes);
    frame.reserve(kFrameHeaderBytes + 24 + records_.size());
    put_result_head(frame, count_);
    frame.insert(frame.end(), records_.begin(), records_.end());
    put_length(frame, 0, static_cast<uint32_t>(frame.size() - kFrameHeaderBytes));
    sealed_.push_back(std::move(frame));
    records_.clear();
    count_ = 0;
}

}  // namespace eventd::server
