#include "producer_ring.hpp"

#include <cerrno>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <string>

#include "../lib/futex.hpp"
#include "../lib/ring_region.hpp"
#include "base/sync_point.hpp"

namespace kmes::shim {
namespace {

base::Result<int> make_memfd(const std::string& name, uint64_t size, bool hugepages) {
    int fd = -1;
    if (hugepages) fd = memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_HUGETLB);
    if (fd < 0) fd = memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) return base::errno_error("memfd_create " + name);
    if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
        base::Error e = base::errno_error("size " + name + " to " + std::to_string(size) + " bytes");
        close(fd);
        return e;
    }
    // The size is part of the ABI: nobody may grow or shrink it under a mapping.
    (void)fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW);
    return fd;
}

// A second, read-only file description of the same memfd: what consumers receive. A mapping
// of it can never gain PROT_WRITE (mprotect fails with EACCES).
base::Result<int> reopen_read_only(int fd) {
    std::string path = "/proc/self/fd/" + std::to_string(fd);
    int ro = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (ro < 0) return base::errno_error("reopen " + path + " read-only");
    return ro;
}

}  // namespace

base::Result<std::unique_ptr<ProducerRing>> ProducerRing::create(uint16_t cpu_id, uint64_t capacity, uint64_t generation,
                                                           const RingOptions& options) {
    std::unique_ptr<ProducerRing> ring(new ProducerRing());
    ring->cpu_id_ = cpu_id;
    ring->created_generation_ = generation;
    const std::string tag = "kmes-ring-" + std::to_string(cpu_id) + "-g" + std::to_string(generation);

    auto producer = make_memfd(tag + "-producer", KMES_PAGE_SIZE, false);
    if (!producer) return producer.error();
    ring->producer_fd_ = *producer;
    auto consumer = make_memfd(tag + "-consumer", KMES_PAGE_SIZE, false);
    if (!consumer) return consumer.error();
    ring->consumer_fd_ = *consumer;
    auto data = make_memfd(tag + "-data", capacity, options.hugepages);
    if (!data && options.hugepages) data = make_memfd(tag + "-data", capacity, false);  // none reserved: fall back
    if (!data) return data.error();
    ring->data_fd_ = *data;
    auto ro_producer = reopen_read_only(ring->producer_fd_);
    if (!ro_producer) return ro_producer.error();
    ring->ro_producer_fd_ = *ro_producer;
    auto ro_data = reopen_read_only(ring->data_fd_);
    if (!ro_data) return ro_data.error();
    ring->ro_data_fd_ = *ro_data;

    auto base = detail::map_ring_region(ring->producer_fd_, ring->consumer_fd_, ring->data_fd_, capacity,
                                        detail::MapAccess::producer);
    if (!base && options.hugepages) {  // hugetlb memfd without reserved pages: retry on normal pages
        RingOptions plain = options;
        plain.hugepages = false;
        return create(cpu_id, capacity, generation, plain);
    }
    if (!base) return base.error();
    ring->base_ = *base;
    ring->view_ = detail::view_of(ring->base_, capacity);

    if (options.mlock) {
        // Prefault and pin the data pages so the first lap never takes page faults (BH-005).
        if (mlock(ring->view_.data, capacity) != 0) return base::errno_error("mlock ring data (" + tag + ")");
    }

    // Producer page, cache line 0 (§5.1.6): written once, before any consumer can see it.
    // Fresh memfd pages are zero, so every reserved byte is already zero.
    uint8_t* p = ring->view_.producer;
    std::memcpy(p + KMES_OFF_MAGIC, KMES_RING_MAGIC, KMES_RING_MAGIC_LEN);
    detail::RingView::store_le<uint32_t>(p + KMES_OFF_VERSION, KMES_RING_VERSION);
    detail::RingView::store_le<uint16_t>(p + KMES_OFF_CPU_ID, cpu_id);
    detail::RingView::store_le<uint64_t>(p + KMES_OFF_CAPACITY, capacity);
    detail::RingView::store_le<uint64_t>(p + KMES_OFF_DATA_OFFSET, KMES_DATA_OFFSET);
    ring->view_.generation().store(generation, std::memory_order_release);
    return ring;
}

ProducerRing::~ProducerRing() {
    if (base_) detail::unmap_ring_region(base_, view_.capacity);
    for (int fd : {producer_fd_, consumer_fd_, data_fd_, ro_producer_fd_, ro_data_fd_})
        if (fd >= 0) close(fd);
}

// §5.1.8 step 6: advance tail_pos over the oldest events until `size` more bytes fit.
void ProducerRing::make_room(uint64_t size) {
    const uint64_t cap = view_.capacity;
    if (frontier_ + size - tail_ <= cap) return;
    uint64_t tail = tail_;
    while (frontier_ + size - tail > cap) {
        const uint32_t victim = detail::RingView::load_le<uint32_t>(view_.at(tail) + KMES_HDR_EVENT_SIZE);
        // Only the shim writes the data region, so a size that does not lead to the next event
        // means its memory was corrupted: give up the whole ring rather than walk forever.
        if (victim == 0 || victim > frontier_ - tail) {
            tail = frontier_;
            break;
        }
        tail += victim;
    }
    // A batch larger than the ring would move tail_pos past the still-unpublished part of the
    // batch; a consumer jumping to such a tail would read bytes that are not yet published.
    // Publish what the batch has written so far first (rare: a batch bigger than the ring).
    if (tail > view_.write_pos().load(std::memory_order_relaxed)) publish();
    tail_ = tail;
    // Pairs with the consumer's acquire loads of tail_pos (§5.1.9.1 steps 2 and 5). The
    // release fence after it keeps the data stores below from becoming visible before the
    // new tail (the seqlock writer pattern), so a reader that copied overwritten bytes always
    // sees the moved tail on its re-check.
    view_.tail_pos().store(tail, std::memory_order_release);
    std::atomic_thread_fence(std::memory_order_release);
}

void ProducerRing::append(const Stamp& stamp, const EventInput& event, const Identity& identity) {
    const uint64_t size = event_size_of(event);
    make_room(size);
    // §5.1.8 step 7: one contiguous copy; the double mapping makes a wrap invisible.
    uint8_t* out = view_.at(frontier_);
    const uint32_t header_size = KMES_BASE_HEADER_SIZE + static_cast<uint32_t>(event.type.size()) + KMES_IDENTITY_SIZE;
    detail::RingView::store_le<uint32_t>(out + KMES_HDR_EVENT_SIZE, static_cast<uint32_t>(size));
    detail::RingView::store_le<uint32_t>(out + KMES_HDR_HEADER_SIZE, header_size);
    detail::RingView::store_le<uint64_t>(out + KMES_HDR_TIMESTAMP, stamp.timestamp);
    detail::RingView::store_le<uint64_t>(out + KMES_HDR_SEQUENCE, stamp.sequence);
    detail::RingView::store_le<uint16_t>(out + KMES_HDR_CPU_ID, stamp.cpu_id);
    out[KMES_HDR_ORIGIN_CLASS] = stamp.origin_class;
    detail::RingView::store_le<uint16_t>(out + KMES_HDR_TYPE_LEN, static_cast<uint16_t>(event.type.size()));
    uint8_t* cursor = out + KMES_HDR_TYPE;
    std::memcpy(cursor, event.type.data(), event.type.size());
    cursor += event.type.size();
    std::memcpy(cursor, identity.effective_token.data(), 16);
    std::memcpy(cursor + 16, identity.true_token.data(), 16);
    std::memcpy(cursor + 32, identity.process.data(), 16);
    cursor += KMES_IDENTITY_SIZE;
    if (!event.payload.empty()) std::memcpy(cursor, event.payload.data(), event.payload.size());
    frontier_ += size;
}

void ProducerRing::publish() {
    // §5.1.8 step 8. Pairs with the consumer's acquire load of write_pos: whoever sees the new
    // position sees the complete events before it.
    view_.write_pos().store(frontier_, std::memory_order_release);
    notify_if_needed();
}

// §5.1.8 step 9 with DESIGN.md §7's full fence: the write_pos store must be ordered before the
// need_wake load (StoreLoad), or producer and a consumer going to sleep can miss each other.
// Pairs with the seq_cst fence in RingReader::wait between its need_wake store and its loads.
void ProducerRing::notify_if_needed() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    KMES_SYNC_POINT("ProducerRing::notify:before_need_wake_load");
    if (view_.need_wake().load(std::memory_order_relaxed) == 0) return;
    // Release: a consumer woken by the new counter value sees every prior write.
    view_.futex_counter().fetch_add(1, std::memory_order_release);
    detail::futex_wake_all(view_.futex_word());
    futex_wake_calls_.fetch_add(1, std::memory_order_relaxed);
}

uint64_t ProducerRing::adopt_survivors(const ProducerRing& old) {
    const detail::RingView& from = old.view_;
    const uint64_t old_write = from.write_pos().load(std::memory_order_relaxed);
    uint64_t start = from.tail_pos().load(std::memory_order_relaxed);
    // Drop the oldest events until the suffix fits (§5.1.9.3: only the oldest prefix is lost).
    while (old_write - start > view_.capacity)
        start += detail::RingView::load_le<uint32_t>(from.at(start) + KMES_HDR_EVENT_SIZE);
    uint64_t count = 0;
    for (uint64_t pos = start; pos < old_write; ++count)
        pos += detail::RingView::load_le<uint32_t>(from.at(pos) + KMES_HDR_EVENT_SIZE);

    const uint64_t bytes = old_write - start;
    if (bytes > 0) std::memcpy(view_.at(0), from.at(start), bytes);  // contiguous on both sides
    frontier_ = bytes;
    tail_ = 0;
    // Not visible to anyone yet (§5.1.9.4 step 3: fully initialised before the switch).
    view_.write_pos().store(bytes, std::memory_order_release);
    return count;
}

void ProducerRing::retire() {
    // §5.1.9.4 step 5: after the switch. Release pairs with the consumer's acquire load of
    // generation: a consumer that sees the bump also sees the frozen write_pos.
    view_.generation().fetch_add(1, std::memory_order_release);
    // Step 6: sleepers on the old ring must not hang.
    notify_if_needed();
}

}  // namespace kmes::shim
