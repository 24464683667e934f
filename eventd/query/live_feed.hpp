// The live phase of a stream (PSD-008 §8.7): rows committed to an active shard after the
// snapshot the initial result was read from, filtered by the type pattern, WHERE and the
// caller's visibility, field-filtered and SELECTed, in commit order (per shard by id).
// SINCE/UNTIL, SORT, SKIP, TAKE and aggregates shaped only the initial result (§8.7.8).
//
// The server calls read_new(shard) when WriterHooks::on_commit(shard) fires; nothing polls.
// One LiveFeed per stream, used from one thread at a time.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>

#include "eventd/access/policy.hpp"
#include "eventd/query/ast.hpp"
#include "eventd/query/executor.hpp"
#include "base/result.hpp"

namespace eventd::query {

class LiveFeed {
public:
    LiveFeed(const Query& q, std::filesystem::path store_dir, StreamStart start);
    ~LiveFeed();
    LiveFeed(LiveFeed&&) noexcept;
    LiveFeed& operator=(LiveFeed&&) noexcept;

    // Rows committed to active shard `shard_index` after its watermark; filters as above;
    // advances the watermark past every row examined (matching or not). `access` is the
    // stream's CallerAccess (the server resets it when the policy is reloaded); visibility is
    // evaluated through it on every call. An error ends the stream.
    kmes::Status read_new(uint32_t shard_index, access::CallerAccess& access, const RecordSink& sink);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace eventd::query
