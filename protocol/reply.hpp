// One reply frame from eventd (PSD-008 §8.8), cut into its parts without decoding records:
//   {status:"ok", records:[<map>, …]}   {status:"end"}   {status:"watch"}   {status:"error", error:"…"}
//   {status:"gap", lost: n|nil, detail:"…"}   and, in a stream's frames, cursor:"…"
// Unknown keys are ignored, so eventd may add some.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/result.hpp"

namespace protocol {

enum class ReplyStatus { ok, end, watch, error, gap };

struct Reply {
    ReplyStatus status = ReplyStatus::ok;
    std::string error;  // kError: eventd's message
    // Each record's msgpack bytes, inside the frame. Normally only in kOk frames; records that
    // come with `end` or `watch` count as sent just before it, with `error` they are dropped.
    std::vector<std::span<const uint8_t>> records;
    // A stream's position after this frame's records (docs/QUERY-SERVER.md "Cursors").
    std::optional<std::string> cursor;
    // gap: how many records a resumed stream skipped (nullopt: unknown), and eventd's words.
    std::optional<uint64_t> lost;
    std::string detail;
};

// Every record is checked to be a well-formed msgpack map with string keys, so that decoding it
// later (after `end`) cannot fail.
base::Result<Reply> parse_reply(std::span<const uint8_t> frame);

}  // namespace protocol
