// The ABI of <kmes/kmes.h> against the spec tables: PSD-003 §2.1.2 (event header),
// §5.1.6 (producer page), §5.1.7 (consumer page), §5.1.5 (mapped region), §4.1.3 (batch
// entry), and the bytes of a freshly created ring.
#include <catch2/catch.hpp>

#include <cstddef>
#include <fstream>
#include <sstream>
#include <type_traits>

#include "kmes/event.hpp"
#include "ring_harness.hpp"

using namespace kmes;
using namespace kmes::test;

namespace {

template <class T>
T le_at(const uint8_t* p, size_t offset) {
    T v;
    std::memcpy(&v, p + offset, sizeof v);
    return v;
}

bool all_zero(const uint8_t* p, size_t from, size_t to) {
    for (size_t i = from; i < to; ++i)
        if (p[i] != 0) return false;
    return true;
}

// The mappings of /proc/self/maps that lie inside [begin, end): start, end, permissions.
struct MapsEntry {
    uintptr_t start, end;
    std::string perms;
};
std::vector<MapsEntry> maps_within(uintptr_t begin, uintptr_t end) {
    std::vector<MapsEntry> out;
    std::ifstream maps("/proc/self/maps");
    for (std::string line; std::getline(maps, line);) {
        std::istringstream in(line);
        std::string range, perms;
        in >> range >> perms;
        const auto dash = range.find('-');
        const uintptr_t s = std::stoull(range.substr(0, dash), nullptr, 16);
        const uintptr_t e = std::stoull(range.substr(dash + 1), nullptr, 16);
        if (e > begin && s < end) out.push_back({s, e, perms});
    }
    return out;
}

}  // namespace

TEST_CASE("producer page offsets and sizes match PSD-003 §5.1.6", "[abi]") {
    // Cache line 0: static.
    STATIC_REQUIRE(KMES_OFF_MAGIC == 0);
    STATIC_REQUIRE(KMES_RING_MAGIC_LEN == 8);
    STATIC_REQUIRE(KMES_OFF_VERSION == 8);
    STATIC_REQUIRE(KMES_OFF_CPU_ID == 12);
    STATIC_REQUIRE(KMES_OFF_RESERVED0 == 14);
    STATIC_REQUIRE(KMES_OFF_CAPACITY == 16);
    STATIC_REQUIRE(KMES_OFF_DATA_OFFSET == 24);
    STATIC_REQUIRE(KMES_OFF_GENERATION == 32);
    STATIC_REQUIRE(KMES_OFF_RESERVED1 == 40);
    // Sizes follow from the next field's offset: u32 version, u16 cpu_id, u16 reserved0, u64s,
    // reserved1 = 24 bytes up to the end of line 0.
    STATIC_REQUIRE(KMES_OFF_CPU_ID - KMES_OFF_VERSION == 4);
    STATIC_REQUIRE(KMES_OFF_RESERVED0 - KMES_OFF_CPU_ID == 2);
    STATIC_REQUIRE(KMES_OFF_CAPACITY - KMES_OFF_RESERVED0 == 2);
    STATIC_REQUIRE(KMES_OFF_DATA_OFFSET - KMES_OFF_CAPACITY == 8);
    STATIC_REQUIRE(KMES_OFF_GENERATION - KMES_OFF_DATA_OFFSET == 8);
    STATIC_REQUIRE(KMES_OFF_RESERVED1 - KMES_OFF_GENERATION == 8);
    STATIC_REQUIRE(KMES_OFF_WRITE_POS - KMES_OFF_RESERVED1 == 24);
    // Cache line 1: producer.
    STATIC_REQUIRE(KMES_OFF_WRITE_POS == 64);
    STATIC_REQUIRE(KMES_OFF_TAIL_POS == 72);
    STATIC_REQUIRE(KMES_OFF_RESERVED2 == 80);
    STATIC_REQUIRE(KMES_OFF_FUTEX_COUNTER - KMES_OFF_RESERVED2 == 48);
    // Cache line 2: notification.
    STATIC_REQUIRE(KMES_OFF_FUTEX_COUNTER == 128);
    STATIC_REQUIRE(KMES_OFF_RESERVED3 == 132);
    STATIC_REQUIRE(KMES_OFF_RESERVED3 + 60 == 192);
    // The field types of the accessors everyone uses.
    using detail::RingView;
    STATIC_REQUIRE(std::is_same_v<decltype(RingView{}.write_pos()), std::atomic_ref<uint64_t>>);
    STATIC_REQUIRE(std::is_same_v<decltype(RingView{}.tail_pos()), std::atomic_ref<uint64_t>>);
    STATIC_REQUIRE(std::is_same_v<decltype(RingView{}.generation()), std::atomic_ref<uint64_t>>);
    STATIC_REQUIRE(std::is_same_v<decltype(RingView{}.futex_counter()), std::atomic_ref<uint32_t>>);
    STATIC_REQUIRE(std::is_same_v<decltype(RingView{}.need_wake()), std::atomic_ref<uint8_t>>);
}

TEST_CASE("consumer page and mapped region match PSD-003 §5.1.5 and §5.1.7", "[abi]") {
    STATIC_REQUIRE(KMES_PAGE_SIZE == 4096);
    STATIC_REQUIRE(KMES_OFF_NEED_WAKE == 4096);
    STATIC_REQUIRE(KMES_DATA_OFFSET == 8192);
    STATIC_REQUIRE(KMES_MAP_SIZE(65536) == 8192 + 2 * 65536);
    STATIC_REQUIRE(KMES_MAP_SIZE(268435456ull) == 8192 + 2 * 268435456ull);
    STATIC_REQUIRE(KMES_RING_VERSION == 1);
    STATIC_REQUIRE(KMES_MAX_BATCH == 256);
    STATIC_REQUIRE(KMES_MIN_BUFFER_CAPACITY == 65536);
    STATIC_REQUIRE(KMES_MAX_BUFFER_CAPACITY == 268435456);
    STATIC_REQUIRE(KMES_DEFAULT_BUFFER_CAPACITY == 4194304);
}

TEST_CASE("event header offsets and sizes match PSD-003 §2.1.2", "[abi]") {
    STATIC_REQUIRE(KMES_HDR_EVENT_SIZE == 0);
    STATIC_REQUIRE(KMES_HDR_HEADER_SIZE == 4);
    STATIC_REQUIRE(KMES_HDR_TIMESTAMP == 8);
    STATIC_REQUIRE(KMES_HDR_SEQUENCE == 16);
    STATIC_REQUIRE(KMES_HDR_CPU_ID == 24);
    STATIC_REQUIRE(KMES_HDR_ORIGIN_CLASS == 26);
    STATIC_REQUIRE(KMES_HDR_TYPE_LEN == 27);
    STATIC_REQUIRE(KMES_HDR_TYPE == 29);
    STATIC_REQUIRE(KMES_BASE_HEADER_SIZE == 29);
    // Identity stamps (DESIGN.md §2): three GUIDs right after the type.
    STATIC_REQUIRE(KMES_GUID_SIZE == 16);
    STATIC_REQUIRE(KMES_IDENTITY_SIZE == 48);
    STATIC_REQUIRE(KMES_IDENTITY_EFFECTIVE_TOKEN == 0);
    STATIC_REQUIRE(KMES_IDENTITY_TRUE_TOKEN == 16);
    STATIC_REQUIRE(KMES_IDENTITY_PROCESS == 32);
    // Field types as EventView reads them.
    STATIC_REQUIRE(std::is_same_v<decltype(EventView{}.event_size()), uint32_t>);
    STATIC_REQUIRE(std::is_same_v<decltype(EventView{}.header_size()), uint32_t>);
    STATIC_REQUIRE(std::is_same_v<decltype(EventView{}.timestamp()), uint64_t>);
    STATIC_REQUIRE(std::is_same_v<decltype(EventView{}.sequence()), uint64_t>);
    STATIC_REQUIRE(std::is_same_v<decltype(EventView{}.cpu_id()), uint16_t>);
    STATIC_REQUIRE(std::is_same_v<decltype(EventView{}.origin_class()), uint8_t>);
    STATIC_REQUIRE(std::is_same_v<decltype(EventView{}.type_len()), uint16_t>);
    // Origin classes (§2.1.5).
    STATIC_REQUIRE(KMES_ORIGIN_USERSPACE == 0);
    STATIC_REQUIRE(KMES_ORIGIN_KMES == 1);
    STATIC_REQUIRE(KMES_ORIGIN_KACS == 2);
    STATIC_REQUIRE(KMES_ORIGIN_LCS == 3);
}

TEST_CASE("struct kmes_emit_entry is 32 bytes with fields at 0, 8, 16, 24", "[abi]") {
    STATIC_REQUIRE(sizeof(kmes_emit_entry) == 32);
    STATIC_REQUIRE(offsetof(kmes_emit_entry, event_type) == 0);
    STATIC_REQUIRE(offsetof(kmes_emit_entry, event_type_len) == 8);
    STATIC_REQUIRE(offsetof(kmes_emit_entry, payload) == 16);
    STATIC_REQUIRE(offsetof(kmes_emit_entry, payload_len) == 24);
    STATIC_REQUIRE(sizeof(kmes_emit_entry::event_type_len) == 2);
    STATIC_REQUIRE(sizeof(kmes_emit_entry::payload_len) == 4);
}

TEST_CASE("a fresh ring's producer page holds exactly the §5.1.6 initial values", "[abi]") {
    const uint64_t capacity = 131072;
    auto ring = shim::ProducerRing::create(/*cpu_id=*/3, capacity, /*generation=*/1, shim::RingOptions{});
    REQUIRE(ring.ok());
    auto mapping = map_consumer(**ring);
    REQUIRE(mapping.ok());
    REQUIRE(mapping->verify().ok());
    const uint8_t* p = mapping->base();

    CHECK(std::memcmp(p + 0, "KMESRING", 8) == 0);
    const uint8_t magic_bytes[8] = {0x4B, 0x4D, 0x45, 0x53, 0x52, 0x49, 0x4E, 0x47};
    CHECK(std::memcmp(p + 0, magic_bytes, 8) == 0);
    CHECK(le_at<uint32_t>(p, 8) == 1);
    CHECK(le_at<uint16_t>(p, 12) == 3);
    CHECK(le_at<uint16_t>(p, 14) == 0);
    CHECK(le_at<uint64_t>(p, 16) == capacity);
    CHECK(le_at<uint64_t>(p, 24) == 8192);
    CHECK(le_at<uint64_t>(p, 32) == 1);
    CHECK(all_zero(p, 40, 64));
    CHECK(le_at<uint64_t>(p, 64) == 0);
    CHECK(le_at<uint64_t>(p, 72) == 0);
    CHECK(all_zero(p, 80, 128));
    CHECK(le_at<uint32_t>(p, 128) == 0);
    CHECK(all_zero(p, 132, 192));
    CHECK(all_zero(p, 192, 4096));  // the rest of the page is unused
    // Consumer page: need_wake 0, reserved4 zero.
    CHECK(all_zero(p, 4096, 8192));
}

TEST_CASE("a ring maps as 8192 + 2·capacity bytes with the §5.1.5 protections", "[abi]") {
    const uint64_t capacity = 65536;
    auto ring = shim::ProducerRing::create(0, capacity, 1, shim::RingOptions{});
    REQUIRE(ring.ok());
    auto mapping = map_consumer(**ring);
    REQUIRE(mapping.ok());
    const auto begin = reinterpret_cast<uintptr_t>(mapping->base());
    const uintptr_t end = begin + KMES_MAP_SIZE(capacity);

    const auto entries = maps_within(begin, end);
    REQUIRE(!entries.empty());
    uint64_t covered = 0;
    for (const auto& e : entries) {
        CHECK(e.start >= begin);
        CHECK(e.end <= end);
        covered += e.end - e.start;
        const uintptr_t offset = e.start - begin;
        INFO("mapping at offset " << offset << " perms " << e.perms);
        if (offset < KMES_PAGE_SIZE)
            CHECK(e.perms == "r--s");  // producer page RO
        else if (offset < KMES_DATA_OFFSET)
            CHECK(e.perms == "rw-s");  // consumer page RW
        else
            CHECK(e.perms == "r--s");  // data RO
    }
    CHECK(covered == 8192 + 2 * capacity);

    // The data region is the same pages twice (§5.1.4): a producer write at offset i shows
    // at i and at capacity + i of the consumer's view.
    uint8_t* producer_data = (*ring)->view().data;
    producer_data[5] = 0xab;
    producer_data[capacity - 1] = 0xcd;
    const uint8_t* data = mapping->base() + KMES_DATA_OFFSET;
    CHECK(data[5] == 0xab);
    CHECK(data[capacity + 5] == 0xab);
    CHECK(data[2 * capacity - 1] == 0xcd);
}

TEST_CASE("an event written by the shim has the §2.1.2 header at the documented offsets", "[abi]") {
    auto set = make_ring_set(kSmallRing, 2);
    const uint8_t payload[] = {0x93, 0x01, 0x02, 0x03};  // msgpack [1,2,3]
    shim::Identity identity;
    identity.effective_token.fill(0x11);
    identity.true_token.fill(0x22);
    identity.process.fill(0x33);
    const shim::EventInput event{kType, payload};
    REQUIRE(set->write(1, KMES_ORIGIN_USERSPACE, std::span<const shim::EventInput>(&event, 1), identity) == 1);

    auto mapping = map_consumer(*set->ring(1));
    REQUIRE(mapping.ok());
    const uint8_t* e = mapping->base() + KMES_DATA_OFFSET;
    const uint32_t type_len = kType.size();
    CHECK(le_at<uint32_t>(e, 0) == KMES_BASE_HEADER_SIZE + type_len + 48 + sizeof payload);
    CHECK(le_at<uint32_t>(e, 4) == KMES_BASE_HEADER_SIZE + type_len + 48);
    CHECK(le_at<uint64_t>(e, 8) > 1'600'000'000ull * 1'000'000'000ull);  // CLOCK_REALTIME ns
    CHECK(le_at<uint64_t>(e, 16) == 1);                                  // sequences start at 1
    CHECK(le_at<uint16_t>(e, 24) == 1);
    CHECK(e[26] == KMES_ORIGIN_USERSPACE);
    CHECK(le_at<uint16_t>(e, 27) == type_len);
    CHECK(std::string_view(reinterpret_cast<const char*>(e + 29), type_len) == kType);
    CHECK(e[29 + type_len] == 0x11);
    CHECK(e[29 + type_len + 16] == 0x22);
    CHECK(e[29 + type_len + 32] == 0x33);
    CHECK(std::memcmp(e + 29 + type_len + 48, payload, sizeof payload) == 0);
    CHECK(le_at<uint64_t>(mapping->base(), KMES_OFF_WRITE_POS) == le_at<uint32_t>(e, 0));
}
