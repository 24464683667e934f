// A shard writer in-process against a real shard file, with the interleavings that matter
// forced by sync points (no sleeps): retention's batches never run inside a writer's
// transaction (PSD-008 §3.4), and a failed commit is reported only once the writer's lock is
// released (eventd/lock_order.hpp).
#include <catch2/catch.hpp>

#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <future>
#include <thread>
#include <vector>

#include "eventd/ingest/shard_writer.hpp"
#include "base/sync_point.hpp"
#include "unit_util.hpp"
#include "store/retention.hpp"

#ifdef KMES_SYNC_POINTS
namespace {

namespace fs = std::filesystem;
using namespace eventd;

using eventd_unit::TempDir;

std::vector<HandoffItem> events(uint64_t first, uint64_t last) {
    std::vector<HandoffItem> items;
    for (uint64_t s = first; s <= last; ++s) {
        items.push_back(HandoffItem{eventd_unit::kmes_row(s, "t"), Accounting{0, s, s}});
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
