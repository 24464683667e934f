// Typed access to the fields of a mapped ring (PSD-003 §5.1.5–§5.1.7), shared by the
// producer (kmes-shimd) and every consumer. The layout itself is drawn in <kmes/kmes.h>.
//
// All cross-process fields are accessed through std::atomic_ref on the shared mapping.
// Memory-ordering pairs (§5.1.11, DESIGN.md §7) are named at each use, not here.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>

#include "kmes/kmes.h"

namespace kmes::detail {

struct RingView {
    uint8_t* producer = nullptr;  // producer metadata page (4096 bytes)
    uint8_t* consumer = nullptr;  // consumer metadata page (4096 bytes)
    uint8_t* data = nullptr;      // data region, mapped twice back to back (2 × capacity)
    uint64_t capacity = 0;

    template <class T>
    std::atomic_ref<T> field(uint8_t* page, uint32_t offset) const {
        return std::atomic_ref<T>(*reinterpret_cast<T*>(page + offset));
    }
    std::atomic_ref<uint64_t> write_pos() const { return field<uint64_t>(producer, KMES_OFF_WRITE_POS); }
    std::atomic_ref<uint64_t> tail_pos() const { return field<uint64_t>(producer, KMES_OFF_TAIL_POS); }
    std::atomic_ref<uint64_t> generation() const { return field<uint64_t>(producer, KMES_OFF_GENERATION); }
    std::atomic_ref<uint32_t> futex_counter() const { return field<uint32_t>(producer, KMES_OFF_FUTEX_COUNTER); }
    std::atomic_ref<uint8_t> need_wake() const { return field<uint8_t>(consumer, KMES_OFF_NEED_WAKE - KMES_PAGE_SIZE); }
    uint32_t* futex_word() const { return reinterpret_cast<uint32_t*>(producer + KMES_OFF_FUTEX_COUNTER); }

    uint64_t mask() const { return capacity - 1; }
    // Byte run starting at ring position pos; contiguous for up to `capacity` bytes thanks
    // to the double mapping (§5.1.4).
    uint8_t* at(uint64_t pos) const { return data + (pos & mask()); }

    bool magic_ok() const { return std::memcmp(producer + KMES_OFF_MAGIC, KMES_RING_MAGIC, KMES_RING_MAGIC_LEN) == 0; }
    uint32_t version() const { return load_le<uint32_t>(producer + KMES_OFF_VERSION); }
    uint16_t cpu_id() const { return load_le<uint16_t>(producer + KMES_OFF_CPU_ID); }
    uint64_t header_capacity() const { return load_le<uint64_t>(producer + KMES_OFF_CAPACITY); }

    template <class T>
    static T load_le(const uint8_t* p) {  // x86-64/aarch64 little-endian hosts; ABI is LE (§1.3)
        T v;
        std::memcpy(&v, p, sizeof v);
        return v;
    }
    template <class T>
    static void store_le(uint8_t* p, T v) {
        std::memcpy(p, &v, sizeof v);
    }
};

}  // namespace kmes::detail
