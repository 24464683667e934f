// The per-shard hash chain of issue 28 (docs/STORE.md §8 "The chain"): every committed row is
// bound to the ones before it, so that changing, removing, inserting or reordering a row changes
// every head after it — and a signed checkpoint (seal/checkpoint.hpp) pins a head.
//
//   head(origin)   = SHA-256("eventd chain v3" ‖ file_id[16] ‖ u64be(origin_id))
//   digest(row)    = SHA-256(content(row))              every column as stored but the id
//   head(rows a…b) = SHA-256(head(a−1) ‖ digest(a) ‖ … ‖ digest(b) ‖ u64be(a) ‖ u64be(b))
//
// A link covers a *segment*: the rows one writer inserted between two places where it needed
// a head (a commit, or a checkpoint, which signs the head before it). Each segment is stored
// in `chain_segments` with its head and a 4-byte tag of every row's digest, in id order, so
// that a verifier still names the exact row that was changed, moved, removed or inserted.
//
// Why segments: the shard writer is the one thread every row of its shard passes, and ingest is
// bound by it (docs/PERFORMANCE.md §5, §16). The long hash, over the row's bytes, is made where
// the row is made, in parallel (EventRow::content_digest); a per-row link would still cost the
// writer two SHA-256 blocks (~0.11 µs, the whole 5 % budget), a segment costs it half a block
// per row. The writer (ShardDb) and the verifier (seal/verify_store.hpp) both hash through
// here: one encoding, one place.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "event_row.hpp"
#include "store_position.hpp"

namespace eventd::store {

using ChainHead = std::array<uint8_t, 32>;

// The head a shard's chain starts from: `origin_id` is the id of the last row before the chain
// began (0 for a shard created with chains; the largest id issued for a shard that had rows
// before its eventd chained them).
ChainHead chain_origin(const FileId& file_id, int64_t origin_id);

// The columns of one stored row, as a verifier reads them back (payload and event_type by
// reference); EventRow plus its id is the writer's side of the same thing.
struct StoredRow {
    int64_t id = 0;
    std::span<const uint8_t> boot_id;  // 16 bytes when valid
    uint64_t timestamp = 0;
    std::optional<uint16_t> cpu_id;
    std::optional<uint64_t> sequence;
    std::optional<uint8_t> origin_class;
    std::string_view event_type;
    std::optional<std::span<const uint8_t>> effective_token, true_token, process;
    std::optional<std::span<const uint8_t>> payload;
};

// digest(row): the stored row's id is not part of it.
RowDigest row_digest(const StoredRow& row);
RowDigest row_digest(const EventRow& row);

// The first kTagBytes of a row's digest: what a segment keeps of each of its rows.
inline constexpr size_t kTagBytes = 4;
using RowTag = std::array<uint8_t, kTagBytes>;
RowTag row_tag(const RowDigest& digest);

// One segment's link, fed a row at a time. Reused: start() begins the next segment.
class SegmentHasher {
public:
    SegmentHasher();
    ~SegmentHasher();
    SegmentHasher(const SegmentHasher&) = delete;
    SegmentHasher& operator=(const SegmentHasher&) = delete;

    void start(const ChainHead& previous, int64_t first_id);
    void add(const RowDigest& digest);  // the row with the next id
    bool open() const { return open_; }
    int64_t first_id() const { return first_id_; }
    int64_t last_id() const { return first_id_ + int64_t(count_) - 1; }
    // The rows' tags so far, kTagBytes each, in id order.
    const std::vector<uint8_t>& tags() const { return tags_; }
    // head(first_id … last_id). The hasher is then closed (open() false) until start(); its
    // first_id(), last_id() and tags() stay readable.
    ChainHead finish();
    void discard() { open_ = false; }  // a rolled-back transaction's rows

private:
    struct State;
    std::unique_ptr<State> state_;
    int64_t first_id_ = 0;
    size_t count_ = 0;
    bool open_ = false;
    std::vector<uint8_t> tags_;
};

std::string chain_hex(std::span<const uint8_t> bytes);
// 64 hex digits into a head; nullopt when malformed.
std::optional<ChainHead> chain_from_hex(std::string_view hex);

// A place in a chain: the head after row `id`. Its text form "<id>:<64 hex digits>" is how the
// shard's metadata keeps `chain_origin` and `chain_head` (docs/STORE.md).
struct ChainPoint {
    int64_t id = 0;
    ChainHead head{};
};
std::string chain_point_text(const ChainPoint& point);
std::optional<ChainPoint> parse_chain_point(std::string_view text);

}  // namespace eventd::store
