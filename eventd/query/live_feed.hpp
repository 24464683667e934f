// The live phase of a stream (PSD-008 §8.7): rows committed to an active shard after the
// snapshot the initial result was read from (or after a resumed stream's catch-up, resume.hpp),
// filtered by the type pattern, WHERE and the caller's visibility, field-filtered and
// SELECTed, in commit order (per shard file by id). SINCE/UNTIL, SORT, SKIP, TAKE and
// aggregates shaped only the initial result (§8.7.8).
//
// Positions are kept per shard file, by file id (store_position.hpp), not per shard index: a
// file quarantined and replaced under the same name is a new file with ids of its own, and a
// cursor taken from this feed names files the same way.
//
// The server calls read_new(shard) when WriterHooks::on_commit(shard) fires; nothing polls.
// One LiveFeed per stream, used from one thread at a time.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>

#include "eventd/access/policy.hpp"
#include "eventd/query_language/ast.hpp"
#include "eventd/query/row_encoder.hpp"
#include "base/result.hpp"
#include "store/shard_snapshot.hpp"
#include "store/store_position.hpp"

namespace eventd::query {

// Where a delivered record is stored: row `id` of shard file `file` — the unit of a cursor.
struct StoredAt {
    store::FileId file;
    int64_t id;
};

// Receives each record of a stream's live phase (or catch-up) in order, msgpack-encoded for
// the wire (valid during the call), with where it is stored. An error stops the read.
using PositionedSink = std::function<base::Status(std::span<const uint8_t> record, const StoredAt& at)>;

// Reads the rows of `rows` (a live plan's cursor on file `file`) with watermark < id <= hi, in
// id order, kLiveBatchRows per statement run, handing each to `sink`; the watermark ends at hi
// (rows the filters rejected are never examined twice), or, when the sink or a step fails,
// past the last row handed over.
base::Status read_after(store::RowCursor& rows, const store::FileId& file, int64_t& watermark, int64_t hi,
                        RowEncoder& encoder, const PositionedSink& sink);

class LiveFeed {
public:
    // `start`: per file, every row up to this id was delivered or examined (files not named:
    // nothing yet). Its store id is not used.
    LiveFeed(const Query& q, std::filesystem::path store_dir, store::StorePosition start);
    ~LiveFeed();
    LiveFeed(LiveFeed&&) noexcept;
    LiveFeed& operator=(LiveFeed&&) noexcept;

    // Rows committed to active shard `shard_index` after its file's watermark; filters as
    // above; advances the watermark past every row examined (matching or not). `access` is the
    // stream's CallerAccess (the server resets it when the policy is reloaded); visibility is
    // evaluated through it on every call. An error ends the stream.
    base::Status read_new(uint32_t shard_index, access::CallerAccess& access, const PositionedSink& sink);

    // Every file's watermark: the rows delivered or examined so far.
    const store::StorePosition& position() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace eventd::query
