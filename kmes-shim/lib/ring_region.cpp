#include "ring_region.hpp"

#include <cerrno>
#include <sys/mman.h>

namespace kmes::detail {

base::Result<uint8_t*> map_ring_region(int producer_fd, int consumer_fd, int data_fd, uint64_t capacity, MapAccess access) {
    const size_t total = KMES_MAP_SIZE(capacity);
    // Reserve the whole range first so the pieces land contiguously (MAP_FIXED inside our own
    // reservation can never clobber someone else's mapping). The data region is placed on a
    // 2 MiB boundary so a hugepage-backed ring (Hugepages, seed BH-005) can be mapped too.
    constexpr size_t kHugeAlign = 2u << 20;
    void* reserved = mmap(nullptr, total + kHugeAlign, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (reserved == MAP_FAILED) return base::errno_error("reserve ring address space");
    const auto start = reinterpret_cast<uintptr_t>(reserved);
    const uintptr_t data_at = (start + KMES_DATA_OFFSET + kHugeAlign - 1) & ~(kHugeAlign - 1);
    auto* base = reinterpret_cast<uint8_t*>(data_at - KMES_DATA_OFFSET);
    // Give back the unused head and tail of the reservation.
    if (base > reinterpret_cast<uint8_t*>(reserved)) munmap(reserved, base - reinterpret_cast<uint8_t*>(reserved));
    const uintptr_t end = start + total + kHugeAlign;
    if (reinterpret_cast<uintptr_t>(base) + total < end)
        munmap(base + total, end - (reinterpret_cast<uintptr_t>(base) + total));

    // The OS enforces the trust boundary (§5.1.5): consumers get PROT_READ mappings of
    // read-only file descriptions, which mprotect() cannot upgrade.
    const int ro_or_rw = access == MapAccess::producer ? PROT_READ | PROT_WRITE : PROT_READ;
    struct Piece {
        int fd;
        size_t offset;
        size_t length;
        int prot;
    } pieces[] = {
        {producer_fd, 0, KMES_PAGE_SIZE, ro_or_rw},
        {consumer_fd, KMES_PAGE_SIZE, KMES_PAGE_SIZE, PROT_READ | PROT_WRITE},
        {data_fd, KMES_DATA_OFFSET, capacity, ro_or_rw},
        {data_fd, KMES_DATA_OFFSET + capacity, capacity, ro_or_rw},
    };
    for (const Piece& p : pieces) {
        void* at = mmap(base + p.offset, p.length, p.prot, MAP_SHARED | MAP_FIXED, p.fd, 0);
        if (at == MAP_FAILED) {
            int saved = errno;
            munmap(base, total);
            return base::errno_error(saved, "map ring piece at offset " + std::to_string(p.offset));
        }
    }
    return base;
}

int unmap_ring_region(void* base, uint64_t capacity) { return munmap(base, KMES_MAP_SIZE(capacity)); }

}  // namespace kmes::detail
