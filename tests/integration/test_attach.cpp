// kmes_attach / kmes_map against a real kmes-shimd (v0.22 §4.1.4, §5.1.5–§5.1.6).
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include <catch2/catch.hpp>

#include "kmes/kmes.h"
#include "ring_capture.hpp"
#include "support/shim_fixture.hpp"
#include "support/temp_dir.hpp"

using namespace kmes::it;

TEST_CASE("attach: enumerating cpu ids 0, 1, … until EINVAL finds exactly the ring count", "[attach]") {
    auto shim = ShimProcess::start({.cpus = 3});
    uint32_t found = 0;
    int last_errno = 0;
    for (uint32_t cpu = 0; cpu < 64; ++cpu) {
        uint64_t capacity = 0;
        const int fd = kmes_attach(cpu, &capacity);
        if (fd < 0) {
            last_errno = errno;
            break;
        }
        CHECK(capacity == KMES_DEFAULT_BUFFER_CAPACITY);
        close(fd);
        ++found;
    }
    CHECK(found == 3);
    CHECK(errno_name(last_errno) == "EINVAL");
}

TEST_CASE("attach: a cpu id at or beyond the ring count is EINVAL", "[attach]") {
    auto shim = ShimProcess::start({.cpus = 3});
    for (uint32_t cpu : {3u, 4u, 1000u, UINT32_MAX}) {
        uint64_t capacity = 12345;
        errno = 0;
        CHECK(kmes_attach(cpu, &capacity) == -1);
        CHECK(errno_name(errno) == "EINVAL");
        CHECK(capacity == 12345);  // nothing written on failure
    }
}

TEST_CASE("attach: with no shim listening the error is ENOENT (no socket) or ECONNREFUSED (stale socket)", "[attach]") {
    test_support::TempDir dir;
    uint64_t capacity = 0;
    setenv("KMES_SOCKET", (dir / "absent.sock").c_str(), 1);
    CHECK(kmes_attach(0, &capacity) == -1);
    CHECK(errno_name(errno) == "ENOENT");

    // A socket file nobody listens on, as a crashed shim leaves behind.
    {
        ShimProcess shim(ShimOptions{.socket_path = dir / "stale.sock"});
        std::string why;
        REQUIRE(shim.wait_ready(&why));
        shim.signal(SIGKILL);  // no clean shutdown: the socket file stays
        REQUIRE(shim.wait_exit(std::chrono::seconds(5)));
    }
    REQUIRE(access((dir / "stale.sock").c_str(), F_OK) == 0);
    setenv("KMES_SOCKET", (dir / "stale.sock").c_str(), 1);
    CHECK(kmes_attach(0, &capacity) == -1);
    CHECK(errno_name(errno) == "ECONNREFUSED");
}

TEST_CASE("attach: kmes_map with a capacity other than the attachment's is EINVAL", "[attach]") {
    auto shim = ShimProcess::start({.cpus = 1});
    uint64_t capacity = 0;
    const int fd = kmes_attach(0, &capacity);
    REQUIRE(fd >= 0);
    for (uint64_t wrong : {capacity / 2, capacity * 2, uint64_t{0}, capacity + 4096}) {
        errno = 0;
        CHECK(kmes_map(fd, wrong) == nullptr);
        CHECK(errno_name(errno) == "EINVAL");
    }
    void* base = kmes_map(fd, capacity);  // the attachment still works afterwards
    CHECK(base != nullptr);
    if (base) CHECK(kmes_unmap(base, capacity) == 0);
    close(fd);
}

TEST_CASE("attach: a fresh ring has the §5.1.6 producer page and generation 1", "[attach]") {
    auto shim = ShimProcess::start({.cpus = 2});
    for (uint32_t cpu = 0; cpu < 2; ++cpu) {
        auto ring = attach_ring(cpu);
        const uint8_t* p = ring.base();
        CHECK(std::memcmp(p + KMES_OFF_MAGIC, "KMESRING", 8) == 0);
        uint32_t version;
        uint64_t capacity, data_offset;
        std::memcpy(&version, p + KMES_OFF_VERSION, 4);
        std::memcpy(&capacity, p + KMES_OFF_CAPACITY, 8);
        std::memcpy(&data_offset, p + KMES_OFF_DATA_OFFSET, 8);
        CHECK(version == 1);
        CHECK(ring_cpu_id(ring) == cpu);
        CHECK(capacity == ring.capacity());
        CHECK(data_offset == KMES_DATA_OFFSET);
        CHECK(ring_generation(ring) == 1);
    }
}

TEST_CASE("attach: two attachments to one cpu see the same events", "[attach]") {
    auto shim = ShimProcess::start({.cpus = 1});
    auto first = kmes::RingReader::open(0);
    auto second = kmes::RingReader::open(0);
    REQUIRE(first.ok());
    REQUIRE(second.ok());
    REQUIRE(first->mapping().base() != second->mapping().base());  // independent mappings
    for (int i = 0; i < 10; ++i) REQUIRE(emit("attach.shared", nlohmann::json{{"i", i}}) == 0);

    const auto a = drain(*first);
    const auto b = drain(*second);
    REQUIRE(a.size() == 10);
    REQUIRE(b.size() == 10);
    for (size_t i = 0; i < a.size(); ++i) {
        CHECK(a[i].bytes == b[i].bytes);
        CHECK(a[i].payload()["i"] == i);
    }
}
