// A *prototype*, not part of libkmes: the PSD-003 §5.1.9.1 drain applied to a block of
// events instead of one event per call. It exists to measure what would close the gap
// between RingReader::next() and memcpy for small events (docs/PERFORMANCE.md): the
// protocol's fixed costs — the acquire loads of write_pos/tail_pos, the copy call, the
// torn-read re-check — are paid once per block of up to 64 KiB, and steps 6–7 (size
// validation, advancing) run per event on the private copy.
//
// Why it is still the protocol: the block is copied in one step 4, and the step-5 re-check
// of tail_pos covers every byte of it (a producer overwriting position p has first moved
// tail_pos past p with a release store + fence, so a copy that saw new bytes sees the new
// tail). Events are only handed out after that check, from the private copy.
#pragma once

#include <algorithm>
#include <atomic>
#include <vector>

#include "../kmes-shim/lib/ring_layout.hpp"
#include "kmes/event.hpp"

namespace bench {

class BlockDrain {
public:
    explicit BlockDrain(kmes::detail::RingView view, size_t block = 64u << 10)
        : v_(view), block_(block), copy_(std::max<size_t>(block, view.capacity / 2)) {
        read_pos_ = v_.tail_pos().load(std::memory_order_acquire);
    }

    // Hand every event up to the current write_pos to fn(EventView). Returns the count.
    template <class Fn>
    uint64_t drain(Fn&& fn) {
        uint64_t delivered = 0;
        for (;;) {
            const uint64_t write = v_.write_pos().load(std::memory_order_acquire);  // step 1
            if (write == read_pos_) return delivered;
            const uint64_t tail = v_.tail_pos().load(std::memory_order_acquire);  // step 2
            if (read_pos_ < tail || read_pos_ > write) {                          // lapped (or corrupt): resume at tail
                read_pos_ = tail;
                continue;
            }
            // Step 4 for a block; a first event larger than the block is copied whole.
            const uint8_t* src = v_.at(read_pos_);
            const uint32_t first = kmes::detail::RingView::load_le<uint32_t>(src + KMES_HDR_EVENT_SIZE);
            const uint64_t largest = std::min<uint64_t>(first, v_.capacity / 2);  // untrusted until step 5
            const uint64_t len = std::min<uint64_t>(write - read_pos_, std::max<uint64_t>(block_, largest));
            std::memcpy(copy_.data(), src, len);
            std::atomic_thread_fence(std::memory_order_acquire);
            const uint64_t tail_after = v_.tail_pos().load(std::memory_order_acquire);  // step 5
            if (read_pos_ < tail_after) continue;  // part of the block was being overwritten
            // Steps 6–7 per event, on the private copy.
            uint64_t off = 0;
            while (off + KMES_BASE_HEADER_SIZE <= len) {
                const uint32_t size = kmes::detail::RingView::load_le<uint32_t>(copy_.data() + off);
                if (size == 0 || size > len - off) break;
                kmes::EventView event(std::span<const uint8_t>(copy_.data() + off, size));
                if (!event.well_formed()) break;
                fn(event);
                off += size;
                ++delivered;
            }
            // Nothing valid at the start of a block: corrupt, skip to write_pos.
            read_pos_ = off > 0 ? read_pos_ + off : write;
        }
    }

private:
    kmes::detail::RingView v_;
    size_t block_;
    std::vector<uint8_t> copy_;
    uint64_t read_pos_ = 0;
};

}  // namespace bench
