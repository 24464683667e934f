// The query socket's wire format (PSD-008 §8.8, §13.1). Every message, both ways:
//
//   0        4                                   4 + length
//   +--------+-----------------------------------+
//   | length | msgpack map (exactly length bytes)|
//   +--------+-----------------------------------+
//   u32 little-endian
//
//   request   {query: "…", after?: "<cursor>",   client → eventd, exactly one per connection
//              allow_gap?: bool}
//   result    {status: "ok", records: [map, …]}  records packed to ≈ QueryResponseTargetBytes;
//             [cursor: "…"]                      a stream's position after them (ours, issue 12)
//   gap       {status: "gap", lost: n|nil,       a resumed stream skips records retention deleted
//             detail: "…"}                       (allow_gap), before its first record
//   end       [cursor: "…"]                      a resumed query's position after its last frame
//   end       {status: "end"}                    after the last result (not for streams)
//   watch     {status: "watch"[, cursor]}        a stream's initial result is complete (ours)
//   error     {status: "error", error: "…"}      last message; the connection closes
//
// Floats always travel as float64 (the §8.8 value table): eventd encodes its result frames
// with query::to_msgpack_float64 (eventd/server/record_batcher.hpp), never nlohmann's
// to_msgpack (which shrinks floats to float32 when lossless). docs/QUERY-SERVER.md describes
// the protocol for client authors. This library is both ends' (protocol/: the frames here,
// the client in client.hpp, a reply cut into its parts in reply.hpp, STATUS in status.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/result.hpp"

namespace protocol {

inline constexpr size_t kFrameHeaderBytes = 4;

// Sanity cap on a reply frame for clients: eventd packs about QueryResponseTargetBytes (64 KiB)
// per frame and a single record larger than that alone, so anything near this is not eventd.
inline constexpr uint32_t kMaxReplyFrameBytes = 256u * 1024 * 1024;

// The body length announced by a frame header.
uint32_t frame_length(std::span<const uint8_t, kFrameHeaderBytes> header);
// Writes `length` as the header at out[at..at+4).
void put_frame_length(std::vector<uint8_t>& out, size_t at, uint32_t length);
// A whole frame (header + body).
std::vector<uint8_t> frame(std::span<const uint8_t> body);

// The frames eventd sends besides results (RecordBatcher's), whole.
std::vector<uint8_t> error_frame(const std::string& message);
std::vector<uint8_t> end_frame();
std::vector<uint8_t> watch_frame();
// The closing frame of a resumed query's catch-up: watch (a stream) or end, with the cursor.
std::vector<uint8_t> watch_frame(const std::string& cursor);
std::vector<uint8_t> end_frame(const std::string& cursor);
// A resumed stream skips records retention deleted (allow_gap); `lost` unknown when nullopt.
std::vector<uint8_t> gap_frame(std::optional<uint64_t> lost, const std::string& detail);

// "request of N bytes exceeds M (MaxQueryMessageBytes)" — the body is never read (§8.8).
std::string oversized_request_message(uint64_t length, uint32_t max_bytes);

// How deep a request may nest. PSD-008 §8.8 defines the request as {query: <string>}, which
// nests 1 deep, and sets no bound for keys a client adds beside it; 32 (the shim's default
// MaxNestingDepth, PSD-003 §6.1) leaves clients that room while the walk stays bounded — a
// 64 KiB request could otherwise open 64 Ki levels. The number is in the error text
// (docs/QUERY-SERVER.md).
inline constexpr int kRequestMaxDepth = 32;

// What a client asks (§8.8, plus our resumption keys; docs/QUERY-SERVER.md "Cursors").
struct Request {
    std::string query;
    std::optional<std::string> after;  // a cursor ("" = from the oldest record): resume there
    bool allow_gap = false;            // go on past records deleted after `after` (a gap frame says how many)
};

// The request of a body; unknown keys are ignored. Errors (EINVAL), sent back as they are:
//   "request is not valid msgpack"               (garbage, trailing bytes, truncated value)
//   "request must be a map with a string 'query'"
//   "request nests deeper than 32 levels"        (kRequestMaxDepth; read by msgpack::Reader)
//   "request key 'after' must be a cursor string"
//   "request key 'allow_gap' must be true or false"
base::Result<Request> decode_request(std::span<const uint8_t> body);

// The body of a request (what a client sends, framed by frame()).
std::vector<uint8_t> encode_request(const Request& request);

}  // namespace protocol
