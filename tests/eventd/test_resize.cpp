// Resize while ingesting (PSD-008 §2.2.4): the shim's BufferCapacity goes up and down (kmes.json
// rewritten + SIGHUP) while the generators emit and eventd drains. Each drain thread finishes
// the old ring, re-attaches, and resumes after the last sequence it read; every new capacity
// holds far more than eventd lags behind, so nothing is lost and nothing is stored twice.
#include <sys/types.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>

#include <catch2/catch.hpp>

#include "eventctl_query.hpp"
#include "kmes/kmes.h"
#include "pipeline.hpp"
#include "support/eventually.hpp"

using namespace eventd::it;

namespace {

// Capacity of the ring kmes_attach hands out now; 0 on failure.
uint64_t attached_capacity(uint32_t cpu) {
    uint64_t capacity = 0;
    const int fd = kmes_attach(cpu, &capacity);
    if (fd < 0) return 0;
    close(fd);
    return capacity;
}

bool wait_capacity(uint32_t cpus, uint64_t capacity) {
    const auto all_resized = [&] {
        bool all = true;
        for (uint32_t cpu = 0; cpu < cpus; ++cpu) all = all && attached_capacity(cpu) == capacity;
        return all;
    };
    return test_support::eventually(all_resized, std::chrono::seconds(20), std::chrono::milliseconds(20));
}

}  // namespace

TEST_CASE("resize: BufferCapacity up and down while eventd ingests loses nothing and stores nothing twice",
          "[resize]") {
    Pipeline p({.cpus = 2,
                .generate = "rate=2000,payload=64",
                .kmes_config = {{"BufferCapacity", 1 << 20}},
                .eventd = {{"StorageShards", 2}}});
    p.start_eventd();
    std::string progress;  // eventd is ingesting: it has caught up with the rings once
    REQUIRE(wait_accounted(p.store(), p.boot(), p.watch().highest(), std::chrono::seconds(30), &progress));
    // eventd's drain threads on rings of `capacity` (STATUS: each has followed the swap).
    auto eventd_follows = [&](uint64_t capacity) {
        const auto rings = status_of<protocol::status::Ring>(p);
        return rings.size() == p.cpus() &&
               std::all_of(rings.begin(), rings.end(),
                           [&](const protocol::status::Ring& r) { return r.capacity_bytes == capacity; });
    };
    // 256 KiB holds ~1700 events, almost a second of this load: far more than eventd lags.
    for (uint64_t capacity : {4u << 20, 256u << 10, 2u << 20, 512u << 10, 256u << 10, 1u << 20}) {
        INFO("BufferCapacity " << capacity);
        p.shim().write_config({{"BufferCapacity", capacity}});
        p.shim().signal(SIGHUP);
        REQUIRE(wait_capacity(p.cpus(), capacity));
        REQUIRE(test_support::eventually([&] { return eventd_follows(capacity); }, std::chrono::seconds(20)));
        REQUIRE(p.eventd().running());
    }
    // The rings really were swapped: generation 1 at start, + the boot-time resize to 1 MiB, + 6.
    for (uint32_t cpu = 0; cpu < p.cpus(); ++cpu) {
        auto ring = kmes::RingMapping::attach(cpu);
        REQUIRE(ring.ok());
        const uint64_t generation =
            std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(ring->base() + KMES_OFF_GENERATION))
                .load(std::memory_order_acquire);
        CHECK(generation >= 8);
    }
    // Let the watch's readers follow the swaps now: once the shim is frozen, a reader that
    // still had to re-attach could not.
    p.watch().highest();
    const Highest highest = p.finish();

    const StoreContents store = read_store(p.store());
    REQUIRE(store.unreadable.empty());
    const AccountingReport report = check_accounting(store, p.boot(), highest);
    CHECK(report.lost() == 0);
    CHECK(report.gap_records() == 0);
}
