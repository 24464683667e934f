// One drain thread per CPU (PSD-008 §2.2): reads its ring with kmes::RingReader (the whole
// PSD-003 §5.1.9 protocol, copy-out, generation changes), runs gap detection (GapTracker),
// and hands events and gap records to its shard writer(s). It sleeps on the ring's futex when
// idle and blocks when a writer's channel is full (backpressure, never a drop).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "eventd/ingest/gap_tracker.hpp"
#include "kmes/ring_reader.hpp"
#include "eventd/ingest/shard_writer.hpp"

namespace eventd {

struct DrainStats {
    std::atomic<uint64_t> events{0};       // handed to writers
    std::atomic<uint64_t> skipped{0};      // already accounted for (restart resume)
    std::atomic<uint64_t> gaps{0};         // gap records
    std::atomic<uint64_t> lost_events{0};  // sum of gap counts
    std::atomic<uint64_t> last_sequence{0};
    // Ring position as of the drain thread's last look (each cycle, and before each hand-off
    // that may block), for `eventctl status`: lag = write_pos − read_pos.
    std::atomic<uint64_t> capacity_bytes{0};
    std::atomic<uint64_t> read_pos{0};
    std::atomic<uint64_t> write_pos{0};
};

class DrainThread {
public:
    DrainThread(uint32_t cpu, kmes::RingReader reader, const kmes::Guid& boot_id, store::SequenceRanges accounted,
                std::vector<ShardWriter*> shards, std::function<void(const std::string&)> on_fatal);
    ~DrainThread();

    void start();
    // Final drain cycle (§10.2 step 3), then stop. Blocks until the thread has ended.
    void stop();
    // The same without waiting: stop() then finds the thread ended, or about to (shutdown asks
    // every drain first, then waits for each).
    void request_stop();
    // The shim may have died (main saw its watch connection hang up): look at this drain's own
    // attachment now rather than after the idle wait. Called again by main until eventd fails.
    void check_attachment();
    const DrainStats& stats() const { return stats_; }
    uint32_t cpu() const { return cpu_; }
    uint64_t resume_point() const { return resume_point_; }  // highest accounted at startup

private:
    void run();
    bool drain_available();  // false when the reader failed (shim gone)
    // The shim closed our attachment: it died without retiring the ring (SIGKILL).
    bool attachment_hung_up() const;
    void route(HandoffItem item);
    void publish_ring_state();
    bool flush();

    uint32_t cpu_;
    kmes::RingReader reader_;
    kmes::Guid boot_id_;
    GapTracker tracker_;
    uint64_t resume_point_;
    std::vector<ShardWriter*> shards_;
    std::function<void(const std::string&)> on_fatal_;
    std::thread thread_;
    std::atomic<bool> stopping_{false};
    std::atomic<bool> ended_{false};
    std::atomic<bool> check_attachment_{false};  // run() has returned (stop() interrupts the wait until then)
    DrainStats stats_;

    // Round-robin in contiguous runs over this CPU's shards.
    size_t current_shard_ = 0;
    uint64_t run_left_ = 0;
    std::vector<std::vector<HandoffItem>> pending_;  // per shard, pushed in chunks
};

}  // namespace eventd
