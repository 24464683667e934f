// RingMapping (kmes/ring_reader.hpp): one attached, mapped ring of one CPU — the attach
// (§5.1.9 consumer side), kmes_map of its region (ring_region.hpp), and the header check.
#include "kmes/ring_reader.hpp"

#include <cerrno>
#include <unistd.h>

#include <utility>

#include "attach.hpp"
#include "kmes/kmes.h"
#include "ring_layout.hpp"
#include "ring_region.hpp"

namespace kmes {

base::Result<RingMapping> RingMapping::attach(uint32_t cpu) {
    uint64_t capacity = 0;
    uint64_t live_generation = 0;
    Guid boot_id{};
    int fd = detail::attach_ring(cpu, &capacity, &live_generation, boot_id.data());
    if (fd < 0) return base::errno_error("kmes_attach(cpu " + std::to_string(cpu) + ")");
    void* base = kmes_map(fd, capacity);
    if (base == nullptr) {
        base::Error e = base::errno_error("kmes_map(cpu " + std::to_string(cpu) + ")");
        close(fd);
        return e;
    }
    RingMapping mapping(fd, static_cast<uint8_t*>(base), capacity, true, live_generation);
    mapping.boot_id_ = boot_id;
    if (base::Status s = mapping.verify(); !s) return s.error();
    return mapping;
}

RingMapping::RingMapping(int fd, uint8_t* base, uint64_t capacity, bool owns_mapping, uint64_t live_generation)
    : fd_(fd), base_(base), capacity_(capacity), owns_(owns_mapping), live_generation_(live_generation) {}

RingMapping::RingMapping(RingMapping&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      base_(std::exchange(other.base_, nullptr)),
      capacity_(other.capacity_),
      owns_(std::exchange(other.owns_, false)),
      live_generation_(other.live_generation_),
      boot_id_(other.boot_id_) {}

RingMapping& RingMapping::operator=(RingMapping&& other) noexcept {
    if (this != &other) {
        release();
        fd_ = std::exchange(other.fd_, -1);
        base_ = std::exchange(other.base_, nullptr);
        capacity_ = other.capacity_;
        owns_ = std::exchange(other.owns_, false);
        live_generation_ = other.live_generation_;
        boot_id_ = other.boot_id_;
    }
    return *this;
}

RingMapping::~RingMapping() { release(); }

void RingMapping::release() {
    if (owns_ && base_) kmes_unmap(base_, capacity_);
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
    base_ = nullptr;
}

base::Status RingMapping::verify() const {
    const detail::RingView v = detail::view_of(base_, capacity_);
    if (!v.magic_ok()) return base::Error{EPROTO, "ring magic is not \"KMESRING\""};
    if (v.version() != KMES_RING_VERSION)
        return base::Error{EPROTO, "ring format version " + std::to_string(v.version()) + " is not supported (want 1)"};
    if (v.header_capacity() != capacity_)
        return base::Error{EPROTO, "ring header capacity " + std::to_string(v.header_capacity()) +
                                 " differs from the attach capacity " + std::to_string(capacity_)};
    return {};
}

}  // namespace kmes
