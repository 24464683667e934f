// A query's result records packed into reply frames (protocol/wire.hpp): {status:"ok",
// records:[…]} of about QueryResponseTargetBytes, each record encoded once with floats as
// float64 (query::to_msgpack_float64), and in a stream or a resumed query the cursor of the
// position after the frame's last record, sealed by the server's key.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/cursor_key.hpp"
#include "store/store_position.hpp"

namespace eventd::server {

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
