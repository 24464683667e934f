#include "protocol/wire.hpp"

#include <cerrno>
#include <optional>

#include "msgpack/reader.hpp"
#include "msgpack/writer.hpp"

namespace protocol {
namespace msgpack = eventd::msgpack;
namespace {

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

// A reply frame of string fields, in their order (status first).
std::vector<uint8_t> reply_frame(std::initializer_list<std::pair<const char*, std::string>> fields) {
    std::vector<uint8_t> out(kFrameHeaderBytes);
    msgpack::put_map_header(out, fields.size());
    for (const auto& [key, value] : fields) {
        msgpack::put_string(out, key);
        msgpack::put_string(out, value);
    }
    put_frame_length(out, 0, static_cast<uint32_t>(out.size() - kFrameHeaderBytes));
    return out;
}

}  // namespace

uint32_t frame_length(std::span<const uint8_t, kFrameHeaderBytes> h) {
    return uint32_t(h[0]) | uint32_t(h[1]) << 8 | uint32_t(h[2]) << 16 | uint32_t(h[3]) << 24;
}

void put_frame_length(std::vector<uint8_t>& out, size_t at, uint32_t length) {
    out[at] = uint8_t(length);
    out[at + 1] = uint8_t(length >> 8);
    out[at + 2] = uint8_t(length >> 16);
    out[at + 3] = uint8_t(length >> 24);
}

std::vector<uint8_t> frame(std::span<const uint8_t> body) {
    std::vector<uint8_t> out(kFrameHeaderBytes);
    out.insert(out.end(), body.begin(), body.end());
    put_frame_length(out, 0, static_cast<uint32_t>(body.size()));
    return out;
}

std::vector<uint8_t> error_frame(const std::string& message) {
    return reply_frame({{"status", "error"}, {"error", message}});
}
std::vector<uint8_t> end_frame() { return reply_frame({{"status", "end"}}); }
std::vector<uint8_t> watch_frame() { return reply_frame({{"status", "watch"}}); }
std::vector<uint8_t> watch_frame(const std::string& cursor) {
    return reply_frame({{"status", "watch"}, {"cursor", cursor}});
}
std::vector<uint8_t> end_frame(const std::string& cursor) {
    return reply_frame({{"status", "end"}, {"cursor", cursor}});
}
std::vector<uint8_t> gap_frame(std::optional<uint64_t> lost, const std::string& detail) {
    std::vector<uint8_t> out(kFrameHeaderBytes);
    msgpack::put_map_header(out, 3);
    msgpack::put_string(out, "status");
    msgpack::put_string(out, "gap");
    msgpack::put_string(out, "lost");
    if (lost)
        msgpack::put_unsigned(out, *lost);
    else
        msgpack::put_nil(out);
    msgpack::put_string(out, "detail");
    msgpack::put_string(out, detail);
    put_frame_length(out, 0, static_cast<uint32_t>(out.size() - kFrameHeaderBytes));
    return out;
}

std::vector<uint8_t> encode_request(const Request& request) {
    std::vector<uint8_t> out;
    msgpack::put_map_header(out, 1 + (request.after ? 1 : 0) + (request.allow_gap ? 1 : 0));
    msgpack::put_string(out, "query");
    msgpack::put_string(out, request.query);
    if (request.after) {
        msgpack::put_string(out, "after");
        msgpack::put_string(out, *request.after);
    }
    if (request.allow_gap) {
        msgpack::put_string(out, "allow_gap");
        msgpack::put_bool(out, true);
    }
    return out;
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

}  // namespace protocol
