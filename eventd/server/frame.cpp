#include "eventd/server/frame.hpp"

#include <cerrno>
#include <optional>

#include "eventd/query/record.hpp"

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
    static constexpr uint8_t kHead[] = {0x82, 0xa6, 's', 't', 'a', 't', 'u', 's', 0xa2, 'o', 'k',
                                        0xa7, 'r',  'e', 'c', 'o', 'r', 'd', 's'};
    out.insert(out.end(), std::begin(kHead), std::end(kHead));
    if (count <= 15) {
        out.push_back(uint8_t(0x90 | count));
    } else if (count <= 0xffff) {
        out.insert(out.end(), {0xdc, uint8_t(count >> 8), uint8_t(count)});
    } else {
        out.insert(out.end(), {0xdd, uint8_t(count >> 24), uint8_t(count >> 16), uint8_t(count >> 8), uint8_t(count)});
    }
}

// Reads a request without building a tree and without unbounded recursion: nlohmann's msgpack
// reader recurses once per nesting level, so the handler stops it past kMaxDepth (a hostile
// 64 KiB request could otherwise nest 64 Ki levels deep).
class RequestSax {
public:
    static constexpr int kMaxDepth = 32;

    bool null() { return value(false); }
    bool boolean(bool) { return value(false); }
    bool number_integer(json::number_integer_t) { return value(false); }
    bool number_unsigned(json::number_unsigned_t) { return value(false); }
    bool number_float(json::number_float_t, const json::string_t&) { return value(false); }
    bool binary(json::binary_t&) { return value(false); }
    bool string(json::string_t& s) {
        if (depth_ == 1 && expecting_query_) query_ = std::move(s);
        return value(true);
    }
    bool start_object(size_t) {
        if (depth_ == 0) top_is_map_ = true;
        value(false);
        return enter();
    }
    bool key(json::string_t& k) {
        expecting_query_ = depth_ == 1 && k == "query";
        if (expecting_query_) query_.reset();  // the last "query" key counts
        return true;
    }
    bool end_object() { return leave(); }
    bool start_array(size_t) {
        value(false);
        return enter();
    }
    bool end_array() { return leave(); }
    bool parse_error(size_t, const std::string&, const nlohmann::detail::exception&) {
        malformed_ = true;
        return false;
    }

    bool malformed() const { return malformed_; }
    bool too_deep() const { return too_deep_; }
    bool top_is_map() const { return top_is_map_; }
    const std::optional<std::string>& query() const { return query_; }

private:
    bool value(bool is_string) {
        if (depth_ == 1 && expecting_query_ && !is_string) query_.reset();
        expecting_query_ = false;
        return true;
    }
    bool enter() {
        if (++depth_ > kMaxDepth) {
            too_deep_ = true;
            return false;
        }
        return true;
    }
    bool leave() {
        --depth_;
        return true;
    }

    int depth_ = 0;
    bool expecting_query_ = false;
    bool top_is_map_ = false;
    bool malformed_ = false;
    bool too_deep_ = false;
    std::optional<std::string> query_;
};

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
    RequestSax sax;
    const bool ok = json::sax_parse(body.begin(), body.end(), &sax, json::input_format_t::msgpack, true);
    if (sax.too_deep())
        return kmes::Error{EINVAL, "request nests deeper than " + std::to_string(RequestSax::kMaxDepth) + " levels"};
    if (!ok || sax.malformed()) return kmes::Error{EINVAL, "request is not valid msgpack"};
    if (!sax.top_is_map() || !sax.query()) return kmes::Error{EINVAL, "request must be a map with a string 'query'"};
    return *sax.query();
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
