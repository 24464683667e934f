// The ring reader (kmes::RingReader, kmes-shim/lib/ring_reader.cpp, PSD-003 §5.1.9) against a
// ring whose producer page and data area hold arbitrary bytes: a corrupt or hostile producer
// must never make a consumer read outside its mapping, loop, or deliver events without end.
//
// The ring is laid out as kmes_map lays it out (§5.1.5, lib/ring_region.hpp) — producer page,
// consumer page, data area mapped twice back to back — with an inaccessible page on either
// side, so a read past the mapping faults. Capacity 4096 (the smallest). The input:
//
//   bytes 0–7    write_pos          bytes 8–15   tail_pos      bytes 16–23  generation
//   byte  24     bit 0: start at the end (StartAt::end); bit 1: seek_after_sequence(bytes 25–32)
//   bytes 25–32  the sequence to seek after
//   bytes 33–    the data area (the rest zero)
//
// Checked besides the sanitizers: every event delivered is well formed and lies within what
// write_pos says exists; one drain delivers at most capacity / KMES_BASE_HEADER_SIZE events
// (a ring of that capacity cannot hold more) and then reports the ring empty.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "check.hpp"
#include "kmes/event.hpp"
#include "kmes/kmes.h"
#include "kmes/ring_reader.hpp"

namespace {

constexpr uint64_t kCapacity = 4096;
constexpr size_t kHeaderBytes = 33;

// The mapped ring, made once; each input overwrites its producer page and data area.
struct Ring {
    uint8_t* base = nullptr;  // producer page (the region kmes_map returns)
    int producer_fd = -1;
    int consumer_fd = -1;
    int data_fd = -1;

    Ring() {
        producer_fd = memfd_create("fuzz-producer", MFD_CLOEXEC);
        consumer_fd = memfd_create("fuzz-consumer", MFD_CLOEXEC);
        data_fd = memfd_create("fuzz-data", MFD_CLOEXEC);
        FUZZ_CHECK(producer_fd >= 0 && consumer_fd >= 0 && data_fd >= 0);
        FUZZ_CHECK(ftruncate(producer_fd, KMES_PAGE_SIZE) == 0 && ftruncate(consumer_fd, KMES_PAGE_SIZE) == 0 &&
                   ftruncate(data_fd, kCapacity) == 0);
        // guard page | producer | consumer | data | data again | guard page
        const size_t total = KMES_PAGE_SIZE + KMES_MAP_SIZE(kCapacity) + KMES_PAGE_SIZE;
        void* reserved = mmap(nullptr, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        FUZZ_CHECK(reserved != MAP_FAILED);
        base = static_cast<uint8_t*>(reserved) + KMES_PAGE_SIZE;
        place(base, KMES_PAGE_SIZE, producer_fd);
        place(base + KMES_PAGE_SIZE, KMES_PAGE_SIZE, consumer_fd);
        place(base + KMES_DATA_OFFSET, kCapacity, data_fd);
        place(base + KMES_DATA_OFFSET + kCapacity, kCapacity, data_fd);
    }

    static void place(uint8_t* at, size_t length, int fd) {
        void* got = mmap(at, length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
        FUZZ_CHECK(got == at);
    }
};

template <class T>
T load(const uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static Ring ring;
    if (size < kHeaderBytes) return 0;
    uint8_t* producer = ring.base;
    std::memset(producer, 0, KMES_PAGE_SIZE);
    std::memcpy(producer + KMES_OFF_MAGIC, KMES_RING_MAGIC, 8);
    const uint32_t version = KMES_RING_VERSION;
    std::memcpy(producer + KMES_OFF_VERSION, &version, sizeof version);
    std::memcpy(producer + KMES_OFF_CAPACITY, &kCapacity, sizeof kCapacity);
    std::memcpy(producer + KMES_OFF_WRITE_POS, data, 8);
    std::memcpy(producer + KMES_OFF_TAIL_POS, data + 8, 8);
    std::memcpy(producer + KMES_OFF_GENERATION, data + 16, 8);
    const bool start_at_end = data[24] & 1;
    const bool seek = data[24] & 2;
    const uint64_t seek_after = load<uint64_t>(data + 25);
    uint8_t* area = ring.base + KMES_DATA_OFFSET;
    const size_t filled = std::min<size_t>(size - kHeaderBytes, kCapacity);
    std::memcpy(area, data + kHeaderBytes, filled);
    std::memset(area + filled, 0, kCapacity - filled);

    kmes::ReaderOptions options;
    options.start = start_at_end ? kmes::StartAt::end : kmes::StartAt::tail;
    // The generation never changes here; a re-attach would be a reader bug.
    options.reattach = [](uint32_t) -> base::Result<kmes::RingMapping> {
        return base::Error{base::ErrorCode::stale, "no re-attach in the fuzz target"};
    };
    kmes::RingReader reader(0, kmes::RingMapping(-1, ring.base, kCapacity, /*owns_mapping=*/false), options);
    if (seek) reader.seek_after_sequence(seek_after);

    const uint64_t write_pos = load<uint64_t>(data);
    constexpr uint64_t kMostEvents = kCapacity / KMES_BASE_HEADER_SIZE;
    uint64_t delivered = 0;
    for (;;) {
        auto next = reader.next();
        FUZZ_CHECK(next.ok());
        if (!next.value()) break;
        const kmes::EventView& event = *next.value();
        ++delivered;
        FUZZ_CHECK(delivered <= kMostEvents);
        FUZZ_CHECK(event.bytes().size() <= kCapacity);
        FUZZ_CHECK(reader.read_pos() <= write_pos);
        // Every accessor over a copy of exactly the event's bytes (ASan sees any overread).
        const std::vector<uint8_t> copy(event.bytes().begin(), event.bytes().end());
        const kmes::EventView exact(copy);
        FUZZ_CHECK(exact.well_formed());
        volatile size_t touched = exact.type().size() + exact.payload().size() + exact.process()[0] +
                                  exact.true_token()[0] + exact.effective_token()[0] + exact.origin_class();
        (void)touched;
    }
    return 0;
}
