// The deterministic fixture store of the query tests, built from tests/query/fixture/events.jsonl
// (format and contents: tests/query/fixture/README.md) with the real store code (store::ShardDb):
//
//   shard-0000.db, shard-0001.db  active: eventd runs with StorageShards 2 and adds its own
//                                 synthetic.startup/shutdown rows to shard 0
//   shard-0002.db                 historical: eventd never writes it, queries still read it
//
// Timestamps are fixed, except "now-10m", "today+1s", … which resolve when the store is built,
// so queries such as `SINCE 1h ago` have expectations independent of the exact time.
#pragma once

#include <cstdint>
#include <string>

namespace eventd::query_it {

struct FixtureInfo {
    size_t events = 0;     // rows written
    int64_t built_at = 0;  // "now" of the relative timestamps (ns since the epoch)
};

// Write the fixture into `store_dir` (created if missing; must not hold shard files yet).
// Throws std::runtime_error naming the line of the fixture file that could not be used.
FixtureInfo build_fixture_store(const std::string& store_dir);

// `rows` extra events of type filler.row (payload {"i": n, "s": "row-n"}, boot B, cpu n % 4,
// 2026-02-01 onwards) in historical shard `shard` (>= 3): a store large enough that a query
// scanning it outlasts QueryTimeoutMs.
void add_filler_shard(const std::string& store_dir, uint32_t shard, uint64_t rows);

// $QUERY_FIXTURE (set by tests/query/meson.build; the forward and collector tests share its environment).
std::string fixture_path();

}  // namespace eventd::query_it
