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
// Floats always travel as float64 (the §8.8 value table); reply frames are therefore encoded
// with query::to_msgpack_float64, never nlohmann's to_msgpack (which shrinks floats to
// float32 when lossless). docs/QUERY-SERVER.md describes the protocol for client authors.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.hpp"
#include "store/cursor_key.hpp"
#include "store/store_position.hpp"

namespace eventd::server {

inline constexpr size_t kFrameHeaderBytes = 4;

// The body length announced by a frame header.
uint32_t frame_length(std::span<const uint8_t, kFrameHeaderBytes> header);

// A whole frame (header + body) for `body`, floats as float64.
std::vector<uint8_t> encode_frame(const nlohmann::json& body);
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

// Packs records into {status:"ok", records:[…]} frames of about `target_bytes`: a record is
// encoded once, appended, and the frame is cut before the record that would take it past
// the target — so a record larger than the target travels alone, whole (never split).
class RecordBatcher {
public:
    // `cursor_key` seals the cursors of a tracking batcher (store/cursor_key.hpp); it must
    // outlive the batcher, and only a batcher with one may track a position.
    explicit RecordBatcher(size_t target_bytes, const store::CursorKey* cursor_key = nullptr)
        : target_(target_bytes), cursor_key_(cursor_key) {}

    // Encode and queue `record`; afterwards take every sealed frame (has_frame/next_frame).
    void add(const nlohmann::json& record);
    // Queue a record already encoded (one msgpack map, floats float64); `at` is where it was
    // stored (row `id` of file `file`), for a batcher that tracks a position.
    struct Stored {
        store::FileId file;
        int64_t id;
    };
    void add_encoded(std::span<const uint8_t> record, std::optional<Stored> at = std::nullopt);
    // A stream: every frame sealed from now on carries `cursor` — the position after its last
    // record. advance() moves the position past rows examined that did not match (it goes into
    // the next frame; the caller sends a frame of its own when it wants it said).
    void track_position(store::StorePosition position) {
        assert(cursor_key_ != nullptr);  // never a cursor in the clear
        if (cursor_key_) position_ = std::move(position);
    }
    void advance(Stored past) {
        if (position_) position_->last_id[past.file] = past.id;
    }
    const std::optional<store::StorePosition>& position() const { return position_; }
    bool has_frame() const { return !sealed_.empty(); }
    std::vector<uint8_t> next_frame();
    // Seal the open batch (if it holds records) so next_frame() returns it.
    void flush();
    // flush(), or, with no records open, an ok frame without records that carries the cursor
    // (a tracking batcher only).
    void flush_position();
    size_t pending_records() const { return count_; }

private:
    void seal();

    size_t target_;
    const store::CursorKey* cursor_key_;
    std::vector<uint8_t> records_;  // encoded records of the open batch, back to back
    size_t count_ = 0;
    std::vector<std::vector<uint8_t>> sealed_;  // frames ready to send, in order
    std::vector<uint8_t> scratch_;
    std::optional<store::StorePosition> position_;
};

}  // namespace eventd::server
