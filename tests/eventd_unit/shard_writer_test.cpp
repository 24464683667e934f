// A shard writer in-process against a real shard file, with the interleavings that matter
// forced by sync points (no sleeps): retention's batches never run inside a writer's
// transaction (PSD-008 §3.4), and a failed commit is reported only once the writer's lock is
// released (eventd/lock_order.hpp).
#include <catch2/catch.hpp>

#include <stdlib.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <set>
#include <future>
#include <thread>
#include <vector>

#include "eventd/ingest/redelivery.hpp"
#include "eventd/ingest/shard_writer.hpp"
#include "base/sync_point.hpp"
#include "store/retention.hpp"
#include "support/rows.hpp"
#include "support/temp_dir.hpp"

#ifdef KMES_SYNC_POINTS
namespace {

namespace fs = std::filesystem;
using namespace eventd;

using test_support::TempDir;

std::vector<HandoffItem> events(uint64_t first, uint64_t last) {
    std::vector<HandoffItem> items;
    for (uint64_t s = first; s <= last; ++s) {
        items.push_back(
            HandoffItem{test_support::event_row({.timestamp = s, .sequence = s, .origin_class = 1, .type = "t"}),
                        Accounting{0, s, s}});
    }
    return items;
}

struct SyncPoints {
    ~SyncPoints() { base::sync::clear_all(); }
};

}  // namespace

TEST_CASE("retention waits for the writer's open transaction and then sees its rows", "[shard_writer]") {
    TempDir dir;
    auto db = store::ShardDb::open(dir.path(), 0);
    REQUIRE(db.ok());
    WriterSettings settings;
    ShardWriter writer(std::move(*db), kmes::Guid{}, settings, WriterHooks{});
    SyncPoints cleanup;

    // Order under test: writer inside its transaction (rows inserted, COMMIT not yet run) →
    // retention asks for the shard → the writer commits → retention's batch runs.
    std::promise<void> in_transaction;
    std::promise<void> retention_asked;
    std::shared_future<void> asked = retention_asked.get_future().share();
    std::atomic<int> commits{0};
    base::sync::set_callback("ShardWriter::commit_batch:before_commit", [&, asked] {
        if (commits.fetch_add(1) != 0) return;  // only the first batch is held
        in_transaction.set_value();
        asked.wait();
    });
    writer.start();
    auto batch = events(1, 10);
    REQUIRE(writer.handoff().push(batch));
    in_transaction.get_future().wait();

    uint64_t deleted = 0;
    std::atomic<bool> asked_once{false};
    std::thread retention([&] {
        const store::RetentionShards shards{1, [&](uint32_t, const std::function<void(store::ShardDb&)>& f) {
                                                if (!asked_once.exchange(true)) retention_asked.set_value();
                                                writer.exclusive(f);
                                            }};
        store::RetentionOptions options;
        options.pause = std::chrono::milliseconds(0);
        deleted = store::run_retention(shards, store::RetentionLimits{.cutoff_ns = 100}, options).deleted;
    });
    retention.join();
    writer.finish();
    // Inside the transaction delete_oldest is refused (ErrorCode::invalid) and would delete
    // nothing; after the commit it deletes all ten rows in one batch.
    CHECK(deleted == 10);
    CHECK(writer.stats().rows.load() == 10);
}
#endif

namespace {

// A source that may deliver a record twice, as the collector does (redelivery.hpp): it says
// which sequences it has stored already and records what the writer settles.
class RecordingSource final : public eventd::RedeliveringSource {
public:
    std::set<uint64_t> stored;  // sequences to report as stored already
    eventd::ShardWriter* writer = nullptr;

    base::Result<bool> stored_already(eventd::store::ShardDb&, const eventd::HandoffItem& item) const override {
        return stored.count(item.accounting->first) != 0;
    }
    void settled(const std::vector<uint64_t>& ids, bool committed) override {
        // Takes the shard's lock: under it (the contract broken) a debug build aborts on the
        // lock order and a release build deadlocks — either way the test fails.
        const auto state = writer->committed_state();
        std::lock_guard lock(mutex);
        for (uint64_t id : ids) settled_ids.push_back(id);
        all_committed = all_committed && committed;
        committed_seen = state.empty() ? 0 : state.begin()->second.highest();
        done.notify_all();
    }

    std::mutex mutex;
    std::condition_variable done;
    std::vector<uint64_t> settled_ids;
    bool all_committed = true;
    uint64_t committed_seen = 0;  // highest sequence committed when the last receipt was settled
};

}  // namespace

TEST_CASE("a redelivering source's records: its duplicate check decides, its receipts settle after the shard's lock",
          "[shard_writer]") {
    using namespace eventd;
    test_support::TempDir dir;
    auto db = store::ShardDb::open(dir.path(), 0);
    REQUIRE(db.ok());
    WriterSettings settings;
    ShardWriter writer(std::move(*db), kmes::Guid{}, settings, WriterHooks{});
    RecordingSource source;
    source.writer = &writer;
    source.stored = {3};
    writer.start();

    std::vector<HandoffItem> items;
    for (uint64_t s = 1; s <= 5; ++s) {
        HandoffItem item{test_support::event_row({.timestamp = s, .sequence = s, .origin_class = 1, .type = "t"}),
                         Accounting{0, s, s}};
        item.receipt = {&source, 100 + s};
        items.push_back(std::move(item));
    }
    REQUIRE(writer.handoff().push(items));
    {
        std::unique_lock lock(source.mutex);
        REQUIRE(source.done.wait_for(lock, std::chrono::seconds(30), [&] { return source.settled_ids.size() == 5; }));
    }
    writer.finish();
    CHECK(source.settled_ids == std::vector<uint64_t>{101, 102, 103, 104, 105});
    CHECK(source.all_committed);
    CHECK(source.committed_seen == 5);  // settled after the commit, never before
    CHECK(writer.stats().rows.load() == 4);
    CHECK(writer.stats().duplicates.load() == 1);
}
