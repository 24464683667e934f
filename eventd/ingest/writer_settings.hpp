// The tuning keys a running eventd hands its shard writers and their index maintenance;
// reload() changes them at once (PSD-008 §12.1), so every one is an atomic read where used.
#pragma once

#include <atomic>
#include <cstdint>

namespace eventd {

struct WriterSettings {
    std::atomic<uint32_t> max_batch_size{10000};
    std::atomic<uint32_t> max_batch_latency_ms{100};
    std::atomic<uint32_t> commit_delay_ms{0};  // group commit (CommitDelayMs)
    std::atomic<uint32_t> checkpoint_interval_s{60};  // sealed stores (CheckpointIntervalSeconds)
    // Index shedding (PSD-008 §3.3.4, §12.1).
    std::atomic<uint32_t> shedding_window_seconds{30};
    std::atomic<uint32_t> shedding_batch_percent{75};
    std::atomic<uint32_t> emergency_shedding_buffer_percent{75};
};

}  // namespace eventd
