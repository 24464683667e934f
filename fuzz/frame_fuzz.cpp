// The query socket's frames (protocol/wire.hpp, PSD-008 §8.8) over an arbitrary byte
// stream, cut into frames wherever its length headers say — so frame bodies start and end at
// arbitrary places of the msgpack inside. Both ends' decoders read every frame:
//   eventd    frame_length, the MaxQueryMessageBytes check, decode_request (a request);
//   eventctl  parse_reply (protocol/reply.hpp: a reply, records cut out without decoding).
// Checked besides "no crash": decode_request fails only with its documented messages, and what
// it returns travels back unchanged through encode_frame; a request's `after` (a cursor a
// client sends: attacker text) decodes only when it is exactly what encode_cursor writes, and
// is refused with EINVAL otherwise; parse_reply's records are
// each one msgpack map, and RecordBatcher packs them into frames parse_reply reads back the
// same. A stream ending inside a header or a body is what a closed connection looks like.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "check.hpp"
#include "eventd/server/record_batcher.hpp"
#include "msgpack/reader.hpp"
#include "protocol/reply.hpp"
#include "protocol/wire.hpp"
#include "store/cursor_key.hpp"
#include "store/store_position.hpp"

namespace {

namespace server = eventd::server;
namespace msgpack = eventd::msgpack;

constexpr uint32_t kMaxQueryMessageBytes = 65536;  // eventd's default (docs/CONFIGURATION.md)

bool documented_request_error(const std::string& message) {
    return message == "request is not valid msgpack" || message == "request must be a map with a string 'query'" ||
           message == "request nests deeper than " + std::to_string(protocol::kRequestMaxDepth) + " levels" ||
           message == "request key 'after' must be a cursor string" ||
           message == "request key 'allow_gap' must be true or false";
}

void check_request(std::span<const uint8_t> body) {
    auto text = protocol::decode_request(body);
    if (!text) {
        FUZZ_CHECK_MSG(documented_request_error(text.error().message), text.error().message);
        return;
    }
    const std::vector<uint8_t> again = protocol::frame(protocol::encode_request(*text));
    const std::span<const uint8_t> again_body = std::span(again).subspan(protocol::kFrameHeaderBytes);
    FUZZ_CHECK(protocol::frame_length(std::span(again).first<protocol::kFrameHeaderBytes>()) == again_body.size());
    auto decoded = protocol::decode_request(again_body);
    FUZZ_CHECK(decoded.ok() && decoded->query == text->query && decoded->after == text->after &&
               decoded->allow_gap == text->allow_gap);
    if (text->after && !text->after->empty()) {
        auto position = eventd::store::decode_cursor(*text->after);
        if (position) {
            FUZZ_CHECK(eventd::store::encode_cursor(*position) == *text->after);  // canonical only
        } else {
            FUZZ_CHECK(position.error().code == base::ErrorCode::invalid);
        }
        // What the server does with it: no input opens under a key the input cannot know
        // (issue 23: cursors cannot be forged) — at most it names another store, and no file.
        static const auto key = eventd::store::CursorKey::random();
        const eventd::store::StoreId here{};
        auto opened = key.open(*text->after, here);
        if (opened) {
            FUZZ_CHECK(opened->store != here && opened->last_id.empty());
        } else {
            FUZZ_CHECK(opened.error().code == base::ErrorCode::invalid);
        }
    }
}

void check_reply(std::span<const uint8_t> body) {
    auto reply = protocol::parse_reply(body);
    if (!reply) return;
    server::RecordBatcher batcher(256);
    for (std::span<const uint8_t> record : reply->records) {
        msgpack::Reader in(record, msgpack::kRecordMaxDepth, msgpack::MapKeys::any);
        FUZZ_CHECK(in.next_is_map());
        FUZZ_CHECK(in.skip() && in.at_end());
        batcher.add_encoded(record);
    }
    batcher.flush();
    size_t repacked = 0;
    while (batcher.has_frame()) {
        const std::vector<uint8_t> frame = batcher.next_frame();
        const std::span<const uint8_t> frame_body = std::span(frame).subspan(protocol::kFrameHeaderBytes);
        FUZZ_CHECK(protocol::frame_length(std::span(frame).first<protocol::kFrameHeaderBytes>()) == frame_body.size());
        auto again = protocol::parse_reply(frame_body);
        FUZZ_CHECK(again.ok() && again->status == protocol::ReplyStatus::ok);
        for (std::span<const uint8_t> record : again->records) {
            FUZZ_CHECK(repacked < reply->records.size());
            const std::span<const uint8_t> original = reply->records[repacked++];
            FUZZ_CHECK(std::equal(record.begin(), record.end(), original.begin(), original.end()));
        }
    }
    FUZZ_CHECK(repacked == reply->records.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::span<const uint8_t> stream(data, size);
    size_t pos = 0;
    while (size - pos >= protocol::kFrameHeaderBytes) {
        const uint32_t length = protocol::frame_length(stream.subspan(pos).first<protocol::kFrameHeaderBytes>());
        pos += protocol::kFrameHeaderBytes;
        if (size - pos < length) break;  // the connection closed inside the body
        const std::span<const uint8_t> body = stream.subspan(pos, length);
        pos += length;
        // eventd refuses an oversized request without reading it; eventctl reads any size
        // up to its own cap, far above what a fuzz input can hold.
        if (length <= kMaxQueryMessageBytes) check_request(body);
        check_reply(body);
    }
    return 0;
}
