// The query socket's wire format (PSD-008 §8.8, §13.1). Every message, both ways:
//
//   0        4                                   4 + length
//   +--------+-----------------------------------+
//   | length | msgpack map (exactly length bytes)|
//   +--------+-----------------------------------+
//   u32 little-endian
//
//   request   {query: "…"}                       client → eventd, exactly one per connection
//   result    {status: "ok", records: [map, …]}  records packed to ≈ QueryResponseTargetBytes
//   end       {status: "end"}                    after the last result (not for streams)
//   watch     {status: "watch"}                  a stream's initial result is complete (ours)
//   error     {status: "error", error: "…"}      last message; the connection closes
//
// Floats always travel as float64 (the §8.8 value table); reply frames are therefore encoded
// with query::to_msgpack_float64, never nlohmann's to_msgpack (which shrinks floats to
// float32 when lossless). docs/QUERY-SERVER.md describes the protocol for client authors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.hpp"

namespace eventd::server {

inline constexpr size_t kFrameHeaderBytes = 4;

// The body length announced by a frame header.
uint32_t frame_length(std::span<const uint8_t, kFrameHeaderBytes> header);

// A whole frame (header + body) for `body`, floats as float64.
std::vector<uint8_t> encode_frame(const nlohmann::json& body);
std::vector<uint8_t> error_frame(const std::string& message);
std::vector<uint8_t> end_frame();
std::vector<uint8_t> watch_frame();

// "request of N bytes exceeds M (MaxQueryMessageBytes)" — the body is never read (§8.8).
std::string oversized_request_message(uint64_t length, uint32_t max_bytes);

// How deep a request may nest. PSD-008 §8.8 defines the request as {query: <string>}, which
// nests 1 deep, and sets no bound for keys a client adds beside it; 32 (the shim's default
// MaxNestingDepth, PSD-003 §6.1) leaves clients that room while the walk stays bounded — a
// 64 KiB request could otherwise open 64 Ki levels. The number is in the error text
// (docs/QUERY-SERVER.md).
inline constexpr int kRequestMaxDepth = 32;

// The query text of a request body. Errors (EINVAL), sent back as they are:
//   "request is not valid msgpack"               (garbage, trailing bytes, truncated value)
//   "request must be a map with a string 'query'"
//   "request nests deeper than 32 levels"        (kRequestMaxDepth; read by msgpack::Reader)
kmes::Result<std::string> decode_request(std::span<const uint8_t> body);

// Packs records into {status:"ok", records:[…]} frames of about `target_bytes`: a record is
// encoded once, appended, and the frame is cut before the record that would take it past
// the target — so a record larger than the target travels alone, whole (never split).
class RecordBatcher {
public:
    explicit RecordBatcher(size_t target_bytes) : target_(target_bytes) {}

    // Encode and queue `record`; afterwards take every sealed frame (has_frame/next_frame).
    void add(const nlohmann::json& record);
    // Queue a record already encoded (one msgpack map, floats float64).
    void add_encoded(std::span<const uint8_t> record);
    bool has_frame() const { return !sealed_.empty(); }
    std::vector<uint8_t> next_frame();
    // Seal the open batch (if it holds records) so next_frame() returns it.
    void flush();
    size_t pending_records() const { return count_; }

private:
    void seal();

    size_t target_;
    std::vector<uint8_t> records_;  // encoded records of the open batch, back to back
    size_t count_ = 0;
    std::vector<std::vector<uint8_t>> sealed_;  // frames ready to send, in order
    std::vector<uint8_t> scratch_;
};

}  // namespace eventd::server
