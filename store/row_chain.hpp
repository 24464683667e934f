// The per-shard hash chain of issue 28 (docs/STORE.md "The hash chain"): every committed row is
// bound to the one before it, so that changing, removing, inserting or reordering a row changes
// every head after it — and a signed checkpoint (seal/checkpoint.hpp) pins a head.
//
//   head(origin)  = SHA-256("eventd chain v2" ‖ file_id[16] ‖ u64be(origin_id))
//   digest(row)   = SHA-256(content(row))                 every column as stored but the id
//   head(row i)   = SHA-256(head(row i−1) ‖ u64be(id) ‖ digest(row i))
//
// Two steps so that the long hash, over the row's bytes, can be made where the row is made, by
// the threads that make rows in parallel (EventRow::content_digest), and the shard writer —
// the one thread every row of its shard passes — hashes only 72 bytes per row (one SHA-256
// block pair; docs/PERFORMANCE.md §16). The id is in the link, so a row moved to another id
// breaks the chain too. chain_link() is the part of a head each row keeps in its `chain`
// column, so that a verifier finds the first changed row without a checkpoint beside it. The
// writer (ShardDb::insert) and the verifier (seal/verify_store.hpp) both hash through here:
// one encoding, one place.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

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

// head(row) from head(previous row).
ChainHead chain_next(const ChainHead& previous, int64_t id, const RowDigest& digest);
ChainHead chain_next(const ChainHead& previous, const StoredRow& row);
// Takes row.content_digest when the row brings one.
ChainHead chain_next(const ChainHead& previous, int64_t id, const EventRow& row);

// The first 8 bytes of a head, big-endian, as the signed integer the `chain` column holds.
int64_t chain_link(const ChainHead& head);

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
