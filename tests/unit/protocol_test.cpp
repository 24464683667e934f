// PSD-003 §5.1.8 write protocol and §5.1.9.1 drain loop, producer and reader in one process:
// wrap, lapping, the 50 % drop, corrupt event sizes, batches.
#include <catch2/catch.hpp>

#include "ring_harness.hpp"

using namespace kmes;
using namespace kmes::test;

namespace {

// Fixed-size events make positions predictable: event i (sequence i + 1) starts at i · size.
constexpr size_t kPayload = 1000;
constexpr uint64_t kEventSize = kHeaderSize + kPayload;

void write_checked(shim::RingSet& set, uint64_t sequence, size_t payload_size = kPayload) {
    std::vector<uint8_t> payload(payload_size);
    fill_payload(sequence, payload);
    REQUIRE(write_one(set, 0, payload) == 1);
}

EventView next_event(RingReader& reader) {
    auto event = reader.next();
    REQUIRE(event.ok());
    REQUIRE(event.value().has_value());
    return *event.value();
}

}  // namespace

TEST_CASE("an event across the wrap point reads back contiguously and intact", "[protocol]") {
    auto set = make_ring_set(kSmallRing);
    RingReader reader = reader_of(*set, 0);
    const uint64_t straddler = kSmallRing / kEventSize;  // index of the event crossing the end
    REQUIRE(straddler * kEventSize < kSmallRing);
    REQUIRE((straddler + 1) * kEventSize > kSmallRing);

    bool saw_wrap = false;
    for (uint64_t sequence = 1; sequence <= straddler + 3; ++sequence) {
        write_checked(*set, sequence);
        const uint64_t offset = reader.read_pos() & (kSmallRing - 1);
        const EventView event = next_event(reader);
        CHECK(event.sequence() == sequence);
        CHECK(event.event_size() == kEventSize);
        CHECK(payload_intact(sequence, event.payload(), kPayload, kPayload));
        if (offset + kEventSize > kSmallRing) {
            saw_wrap = true;
            CHECK(sequence == straddler + 1);
        }
    }
    CHECK(saw_wrap);
    CHECK(reader.stats().laps == 0);
    CHECK(reader.stats().torn_reads == 0);
}

TEST_CASE("a lapped reader jumps to tail_pos and the skipped events are exactly the sequence gap", "[protocol]") {
    auto set = make_ring_set(kSmallRing);
    RingReader reader = reader_of(*set, 0);
    for (uint64_t sequence = 1; sequence <= 5; ++sequence) write_checked(*set, sequence);
    for (uint64_t sequence = 1; sequence <= 5; ++sequence) CHECK(next_event(reader).sequence() == sequence);
    const uint64_t pos_before = reader.read_pos();
    REQUIRE(pos_before == 5 * kEventSize);

    // Write several laps' worth while the reader sleeps.
    const uint64_t total = 205;
    for (uint64_t sequence = 6; sequence <= total; ++sequence) write_checked(*set, sequence);
    // The producer advanced tail_pos by whole events until the newest fit (§5.1.8 step 6).
    const uint64_t overwritten = (total * kEventSize - kSmallRing + kEventSize - 1) / kEventSize;
    REQUIRE(reader.tail_pos_now() == overwritten * kEventSize);

    const EventView first = next_event(reader);
    CHECK(reader.stats().laps == 1);
    CHECK(reader.stats().lapped_bytes == overwritten * kEventSize - pos_before);
    CHECK(first.sequence() == overwritten + 1);  // the oldest survivor
    CHECK(payload_intact(first.sequence(), first.payload(), kPayload, kPayload));
    // The gap 6..overwritten is exactly the events behind tail_pos the reader never saw.
    CHECK(first.sequence() - 5 - 1 == reader.stats().lapped_bytes / kEventSize);

    uint64_t expected = first.sequence() + 1;
    for (uint64_t seq : drain_sequences(reader)) CHECK(seq == expected++);
    CHECK(expected == total + 1);
    CHECK(reader.stats().laps == 1);
}

TEST_CASE("a copy overwritten before the tail re-check is discarded as torn", "[protocol]") {
    // §5.1.9.1 step 5, forced: while the reader holds its copy of the oldest event, the producer
    // laps over it. The moved tail_pos must make the reader discard the copy and jump.
    SyncPointGuard guard;
    auto set = make_ring_set(kSmallRing);
    RingReader reader = reader_of(*set, 0);
    const uint64_t fitting = kSmallRing / kEventSize;
    for (uint64_t sequence = 1; sequence <= fitting; ++sequence) write_checked(*set, sequence);
    REQUIRE(reader.tail_pos_now() == 0);

    base::sync::set_callback("RingReader::read:after_copy", [&] {
        base::sync::clear_all();  // once
        write_checked(*set, fitting + 1);
        write_checked(*set, fitting + 2);
    });
    const EventView first = next_event(reader);
    const uint64_t overwritten = ((fitting + 2) * kEventSize - kSmallRing + kEventSize - 1) / kEventSize;
    CHECK(reader.stats().torn_reads == 1);
    CHECK(reader.stats().laps == 1);
    CHECK(first.sequence() == overwritten + 1);
    CHECK(payload_intact(first.sequence(), first.payload(), kPayload, kPayload));
}

TEST_CASE("an event over 50 % of capacity is dropped with its sequence consumed", "[protocol]") {
    auto set = make_ring_set(kSmallRing);
    RingReader reader = reader_of(*set, 0);
    const size_t too_big = kSmallRing / 2 - kHeaderSize + 1;  // event_size = capacity / 2 + 1

    write_checked(*set, 1, 16);
    std::vector<uint8_t> big(too_big);
    CHECK(write_one(*set, 0, big) == 0);
    write_checked(*set, 3, 16);

    CHECK(next_event(reader).sequence() == 1);
    CHECK(next_event(reader).sequence() == 3);  // sequence 2 was consumed by the drop
    CHECK(drain_sequences(reader).empty());
    const shim::RingStats stats = set->stats(0);
    CHECK(stats.dropped == 1);
    CHECK(stats.written == 2);
    CHECK(stats.last_sequence == 3);
}

TEST_CASE("an event of exactly 50 % of capacity is written", "[protocol]") {
    auto set = make_ring_set(kSmallRing);
    RingReader reader = reader_of(*set, 0);
    std::vector<uint8_t> half(kSmallRing / 2 - kHeaderSize);
    CHECK(write_one(*set, 0, half) == 1);
    const EventView event = next_event(reader);
    CHECK(event.event_size() == kSmallRing / 2);
    CHECK(set->stats(0).dropped == 0);
}

TEST_CASE("a corrupt event_size makes the reader skip instead of looping", "[protocol]") {
    // Corrupt values: zero, below the base header, below this event's header_size, and
    // larger than what write_pos says exists.
    const uint32_t corrupt = GENERATE(0u, 20u, kHeaderSize - 1, 0xffffffffu);
    // Where: at the reader's position when that is tail_pos, or further into the ring.
    const uint64_t victim = GENERATE(0u, 2u);
    INFO("event_size " << corrupt << " written into event index " << victim);

    auto set = make_ring_set(kSmallRing);
    RingReader reader = reader_of(*set, 0);
    for (uint64_t sequence = 1; sequence <= 4; ++sequence) write_checked(*set, sequence);
    // The producer's own writable view stands in for a corrupting bug in the producer.
    detail::RingView::store_le<uint32_t>(set->ring(0)->view().at(victim * kEventSize), corrupt);

    for (uint64_t i = 0; i < victim; ++i) CHECK(next_event(reader).sequence() == i + 1);
    auto result = within(std::chrono::seconds(5), "RingReader::next over a corrupt event", [&] {
        std::vector<bool> got;
        for (int i = 0; i < 8; ++i) {  // bounded: a correct reader needs one call
            auto e = reader.next();
            got.push_back(e.ok() && e.value().has_value());
        }
        return got;
    });
    CHECK(result == std::vector<bool>(8, false));
    CHECK(reader.stats().corrupt_skips > 0);
    CHECK(reader.read_pos() == reader.write_pos_now());  // already at tail: skipped to write_pos

    // The reader recovers with the next event the producer writes.
    write_checked(*set, 5);
    CHECK(next_event(reader).sequence() == 5);
}

// The next two come from fuzz/ring_reader_fuzz.cpp (regression inputs in
// fuzz/corpus/ring_reader/): a producer page the reader cannot trust must not make it loop or
// read outside its mapping.
TEST_CASE("a tail_pos beyond write_pos makes the reader stop instead of looping", "[protocol]") {
    auto set = make_ring_set(kSmallRing);
    RingReader reader = reader_of(*set, 0);
    for (uint64_t sequence = 1; sequence <= 4; ++sequence) write_checked(*set, sequence);
    const detail::RingView& producer = set->ring(0)->view();
    producer.tail_pos().store(producer.write_pos().load() + 100);  // stands in for a corrupting producer

    auto result = within(std::chrono::seconds(5), "RingReader::next with tail_pos > write_pos", [&] {
        std::vector<bool> got;
        for (int i = 0; i < 8; ++i) {
            auto e = reader.next();
            got.push_back(e.ok() && e.value().has_value());
        }
        return got;
    });
    CHECK(result == std::vector<bool>(8, false));
    CHECK(reader.stats().corrupt_skips > 0);
    CHECK(reader.read_pos() == reader.write_pos_now());  // waits there: wait() sleeps, no busy loop
}

TEST_CASE("a write_pos more than a ring ahead of tail_pos is corrupt, not a huge event", "[protocol]") {
    auto set = make_ring_set(kSmallRing);
    RingReader reader = reader_of(*set, 0);
    for (uint64_t sequence = 1; sequence <= 4; ++sequence) write_checked(*set, sequence);
    const detail::RingView& producer = set->ring(0)->view();
    // An event_size that fits under the corrupt write_pos but not in the double mapping
    // (data + 2 × capacity): copying it would read past the end of the mapping.
    detail::RingView::store_le<uint32_t>(producer.at(2 * kEventSize), 2 * kSmallRing - 1);
    producer.write_pos().store(4 * kSmallRing);

    auto result = within(std::chrono::seconds(5), "RingReader::next with write_pos - tail_pos > capacity",
                         [&] { return drain_sequences(reader, 100); });
    CHECK(result.empty());  // nothing before write_pos can be trusted
    CHECK(reader.stats().corrupt_skips > 0);
    CHECK(reader.read_pos() == 4 * kSmallRing);
}

TEST_CASE("a batch shares one timestamp and becomes visible at once", "[protocol]") {
    SyncPointGuard guard;
    auto set = make_ring_set(kSmallRing);
    RingReader reader = reader_of(*set, 0);
    write_checked(*set, 1, 16);
    REQUIRE(next_event(reader).sequence() == 1);
    const uint64_t before = reader.write_pos_now();

    constexpr int kBatch = 5;
    std::vector<std::vector<uint8_t>> payloads;
    std::vector<shim::EventInput> batch;
    for (int i = 0; i < kBatch; ++i) {
        payloads.emplace_back(32 + i);
        fill_payload(2 + i, payloads.back());
    }
    for (const auto& p : payloads) batch.push_back({kType, p});

    uint64_t write_pos_mid_batch = ~0ull;
    bool reader_saw_something = true;
    base::sync::set_callback("RingSet::write:before_publish", [&] {
        write_pos_mid_batch = reader.write_pos_now();
        auto e = reader.next();
        reader_saw_something = !e.ok() || e.value().has_value();
    });
    REQUIRE(set->write(0, KMES_ORIGIN_KACS, batch, shim::Identity{}) == kBatch);
    base::sync::clear_all();

    CHECK(write_pos_mid_batch == before);  // all five appended, none published yet
    CHECK_FALSE(reader_saw_something);
    uint64_t expected_bytes = 0;
    for (const auto& e : batch) expected_bytes += shim::event_size_of(e);
    CHECK(reader.write_pos_now() == before + expected_bytes);

    std::vector<EventView> events;
    std::vector<std::vector<uint8_t>> copies;  // views die with the next next()
    for (int i = 0; i < kBatch; ++i) {
        const EventView e = next_event(reader);
        copies.emplace_back(e.bytes().begin(), e.bytes().end());
    }
    for (const auto& c : copies) events.emplace_back(c);
    for (int i = 0; i < kBatch; ++i) {
        CHECK(events[i].sequence() == uint64_t(2 + i));
        CHECK(events[i].timestamp() == events[0].timestamp());
        CHECK(payload_intact(2 + i, events[i].payload(), 32 + i, 32 + i));
    }
}
