// Ring swap on a capacity change: PSD-003 §5.1.9.4 on the producer side (RingSet::resize)
// and §5.1.9.3 on the consumer side (RingReader's generation check and re-attach).
#include <catch2/catch.hpp>

#include <atomic>
#include <map>
#include <thread>

#include "ring_harness.hpp"
#include "thread_state.hpp"

using namespace kmes;
using namespace kmes::test;

namespace {

constexpr size_t kSwapPayload = 200;
constexpr uint64_t kSwapEventSize = kHeaderSize + kSwapPayload;

void write_swap_event(shim::RingSet& set, uint64_t sequence) {
    std::vector<uint8_t> payload(kSwapPayload);
    fill_payload(sequence, payload);
    REQUIRE(write_one(set, 0, payload) == 1);
}

// Sequences and payload checks of everything a reader delivers until the ring is empty.
struct Delivery {
    std::vector<uint64_t> sequences;
    uint64_t corrupt = 0;
    uint64_t errors = 0;
};
Delivery drain_checked(RingReader& reader) {
    Delivery d;
    for (;;) {
        auto e = reader.next();
        if (!e.ok()) {
            ++d.errors;
            break;
        }
        if (!e.value()) break;
        const EventView& event = *e.value();
        d.sequences.push_back(event.sequence());
        if (!payload_intact(event.sequence(), event.payload(), kSwapPayload, kSwapPayload)) ++d.corrupt;
    }
    return d;
}

}  // namespace

TEST_CASE("a grow keeps every surviving event in sequence order from position 0", "[swap]") {
    auto set = make_ring_set(kSmallRing);
    const uint64_t count = 400;  // 400 · 287 bytes: more than the ring holds, so tail_pos > 0
    for (uint64_t s = 1; s <= count; ++s) write_swap_event(*set, s);
    auto old = set->ring(0);
    const uint64_t survived = old->view().write_pos().load() - old->view().tail_pos().load();
    const uint64_t first_survivor = old->view().tail_pos().load() / kSwapEventSize + 1;
    REQUIRE(first_survivor > 1);

    REQUIRE(set->resize(4 * kSmallRing).ok());
    auto fresh = set->ring(0);
    CHECK(fresh->capacity() == 4 * kSmallRing);
    CHECK(fresh->view().tail_pos().load() == 0);
    CHECK(fresh->view().write_pos().load() == survived);

    RingReader reader = reader_of(*set, 0);  // attaches after the swap, from tail_pos
    const Delivery d = drain_checked(reader);
    CHECK(d.corrupt == 0);
    REQUIRE(d.sequences.size() == count - first_survivor + 1);
    for (size_t i = 0; i < d.sequences.size(); ++i) CHECK(d.sequences[i] == first_survivor + i);
    // Writers continue on the new ring with the next sequence.
    write_swap_event(*set, count + 1);
    CHECK(drain_sequences(reader) == std::vector<uint64_t>{count + 1});
}

TEST_CASE("a shrink below the surviving range loses only the oldest prefix", "[swap]") {
    auto set = make_ring_set(4 * kSmallRing);
    const uint64_t count = 800;  // ~224 KiB, all surviving in 256 KiB
    for (uint64_t s = 1; s <= count; ++s) write_swap_event(*set, s);
    REQUIRE(set->ring(0)->view().tail_pos().load() == 0);

    REQUIRE(set->resize(kSmallRing).ok());
    for (uint64_t s = count + 1; s <= count + 10; ++s) write_swap_event(*set, s);

    RingReader reader = reader_of(*set, 0);
    const Delivery d = drain_checked(reader);
    CHECK(d.corrupt == 0);
    REQUIRE(!d.sequences.empty());
    // A suffix: no hole after the first delivered sequence, ending with the newest event.
    for (size_t i = 1; i < d.sequences.size(); ++i) CHECK(d.sequences[i] == d.sequences[i - 1] + 1);
    CHECK(d.sequences.back() == count + 10);
    CHECK(d.sequences.front() > 1);
    // …and the longest suffix that fit: one more event would not have.
    CHECK(d.sequences.size() * kSwapEventSize <= kSmallRing);
    CHECK((d.sequences.size() + 1) * kSwapEventSize > kSmallRing);
}

TEST_CASE("a reader attached before a shrink drains the old ring first and loses nothing", "[swap]") {
    auto set = make_ring_set(4 * kSmallRing);
    RingReader reader = reader_of(*set, 0);
    const uint64_t count = 800;
    for (uint64_t s = 1; s <= 5; ++s) write_swap_event(*set, s);
    CHECK(drain_sequences(reader).size() == 5);
    for (uint64_t s = 6; s <= count; ++s) write_swap_event(*set, s);

    REQUIRE(set->resize(kSmallRing).ok());  // the old ring object is freed here: mapping stays valid
    for (uint64_t s = count + 1; s <= count + 10; ++s) write_swap_event(*set, s);

    const Delivery d = drain_checked(reader);
    CHECK(d.errors == 0);
    CHECK(d.corrupt == 0);
    REQUIRE(d.sequences.size() == count + 10 - 5);
    for (size_t i = 0; i < d.sequences.size(); ++i) CHECK(d.sequences[i] == 6 + i);
    CHECK(reader.stats().generation_changes == 1);
    CHECK(reader.generation() == 2);
    CHECK(reader.capacity() == kSmallRing);
}

TEST_CASE("a swap sets new generation = old + 1 before the switch and bumps the old ring after it", "[swap]") {
    SyncPointGuard guard;
    auto set = make_ring_set(kSmallRing);
    write_swap_event(*set, 1);
    auto first = set->ring(0);
    REQUIRE(first->generation() == 1);

    uint64_t old_generation_at_switch = 0;
    base::sync::set_callback("RingSet::resize:after_switch", [&] { old_generation_at_switch = first->generation(); });
    REQUIRE(set->resize(2 * kSmallRing).ok());
    auto second = set->ring(0);
    CHECK(old_generation_at_switch == 1);  // not yet bumped when writers switch (step 5 after 4)
    CHECK(second->generation() == 2);
    CHECK(first->generation() == 2);

    REQUIRE(set->resize(kSmallRing).ok());
    auto third = set->ring(0);
    CHECK(old_generation_at_switch == 2);
    CHECK(third->generation() == 3);
    CHECK(second->generation() == 3);
    CHECK(first->generation() == 2);  // a retired ring is bumped only once
    CHECK(set->stats(0).generation == 3);

    // Resizing to the current capacity swaps nothing.
    REQUIRE(set->resize(kSmallRing).ok());
    CHECK(set->ring(0) == third);
}

TEST_CASE("a reader sleeping on the old ring is woken by the swap", "[swap][notification]") {
    SyncPointGuard guard;
    auto set = make_ring_set(kSmallRing);
    RingReader reader = reader_of(*set, 0);
    write_swap_event(*set, 1);
    REQUIRE(drain_sequences(reader) == std::vector<uint64_t>{1});

    std::atomic<bool> about_to_sleep{false};
    base::sync::set_callback("RingReader::wait:before_futex_wait", [&] { about_to_sleep.store(true); });
    WaitResult result = WaitResult::data_ready;
    std::chrono::steady_clock::duration slept{};
    std::atomic<pid_t> tid{0};
    std::thread sleeper([&] {
        tid.store(current_tid());
        const auto t0 = std::chrono::steady_clock::now();
        result = reader.wait(std::chrono::seconds(10));
        slept = std::chrono::steady_clock::now() - t0;
    });
    while (!about_to_sleep.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    CHECK(wait_until_in_futex(tid.load()));
    REQUIRE(set->resize(2 * kSmallRing).ok());
    sleeper.join();

    using Millis = std::chrono::duration<double, std::milli>;
    INFO("woken " << Millis(slept).count() << " ms after falling asleep");
    CHECK(result == WaitResult::woken);
    CHECK(slept < std::chrono::seconds(10));
    // The wake-up leads the reader to the new ring.
    write_swap_event(*set, 2);
    CHECK(drain_sequences(reader) == std::vector<uint64_t>{2});
    CHECK(reader.generation() == 2);
}

TEST_CASE("a reader whose fresh ring is swapped again before it reads the generation still follows", "[swap]") {
    // Two swaps in quick succession: the reader re-attaches to the ring of the first swap, and
    // the second swap retires that ring before the reader has loaded its generation (§5.1.9.3
    // step 4). The retired ring then shows the same generation as the live one.
    auto set = make_ring_set(kSmallRing);
    bool swap_during_attach = true;
    ReaderOptions options;
    options.reattach = [&](uint32_t cpu) {
        auto mapping = map_consumer(*set->ring(cpu));
        if (swap_during_attach) {
            swap_during_attach = false;
            REQUIRE(set->resize(4 * kSmallRing).ok());
        }
        return mapping;
    };
    auto first = map_consumer(*set->ring(0));
    REQUIRE(first.ok());
    RingReader reader(0, std::move(*first), std::move(options));
    write_swap_event(*set, 1);
    REQUIRE(drain_sequences(reader) == std::vector<uint64_t>{1});

    REQUIRE(set->resize(2 * kSmallRing).ok());
    write_swap_event(*set, 2);                                     // lands on the ring of the first swap
    std::vector<uint64_t> delivered = drain_sequences(reader);  // re-attaches; the second swap happens
    write_swap_event(*set, 3);                                     // lands on the ring of the second swap
    for (int round = 0; round < 4; ++round)
        for (uint64_t s : drain_sequences(reader)) delivered.push_back(s);
    CHECK(delivered == std::vector<uint64_t>{2, 3});
    CHECK(reader.capacity() == 4 * kSmallRing);
    CHECK(reader.generation() == 3);
}

TEST_CASE("a reader constructed on a ring that a swap retired after the attach still follows", "[swap]") {
    // The attach reports the ring's live generation; a swap then retires that ring before the
    // reader exists. Reading the generation from the ring would take the retired ring's bumped
    // value (equal to its successor's) and never leave it.
    auto set = make_ring_set(kSmallRing);
    write_swap_event(*set, 1);
    auto mapping = map_consumer(*set->ring(0));  // attached: live generation 1
    REQUIRE(mapping.ok());
    REQUIRE(set->resize(2 * kSmallRing).ok());  // retires it: its generation becomes 2
    RingReader reader(0, std::move(*mapping), attached_to(*set));
    write_swap_event(*set, 2);  // lands on the new ring only
    std::vector<uint64_t> delivered;
    for (int round = 0; round < 3; ++round)
        for (uint64_t s : drain_sequences(reader)) delivered.push_back(s);
    CHECK(delivered == std::vector<uint64_t>{1, 2});
    CHECK(reader.capacity() == 2 * kSmallRing);
    CHECK(reader.generation() == 2);
}

TEST_CASE("a reader running through resizes up and down sees every sequence exactly once", "[swap][stress]") {
    const uint64_t total = 200'000;
    const std::vector<uint64_t> capacities = {2 * kSmallRing, kSmallRing,     16 * kSmallRing, kSmallRing,
                                              4 * kSmallRing, 2 * kSmallRing, kSmallRing,      8 * kSmallRing};
    auto set = make_ring_set(kSmallRing);
    RingReader reader = reader_of(*set, 0);
    std::atomic<uint64_t> delivered{0};  // the reader's last sequence
    std::atomic<uint64_t> written{0};
    std::atomic<bool> stop{false};
    // Flow control keeps the reader within a quarter of the smallest ring, so overwrite can
    // never lose anything: every loss would be the swap's.
    const uint64_t window = kSmallRing / 4 / kSwapEventSize;

    std::thread producer([&] {
        std::vector<uint8_t> payload(kSwapPayload);
        for (uint64_t s = 1; s <= total; ++s) {
            while (s - delivered.load(std::memory_order_acquire) > window && !stop.load()) std::this_thread::yield();
            fill_payload(s, payload);
            write_one(*set, 0, payload);
            written.store(s, std::memory_order_release);
        }
    });
    uint64_t resizes = 0;
    std::thread resizer([&] {
        size_t i = 0;
        while (written.load() < total && !stop.load()) {
            if (!set->resize(capacities[i++ % capacities.size()]).ok()) break;
            ++resizes;
            std::this_thread::sleep_for(std::chrono::microseconds(500));
        }
    });

    std::vector<uint32_t> seen(total + 1, 0);
    uint64_t corrupt = 0, errors = 0, out_of_order = 0, last = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (last < total && std::chrono::steady_clock::now() < deadline) {
        auto e = reader.next();
        if (!e.ok()) {
            ++errors;
            break;
        }
        if (!e.value()) {
            reader.wait(std::chrono::milliseconds(5));
            continue;
        }
        const EventView& event = *e.value();
        const uint64_t s = event.sequence();
        if (s <= last) ++out_of_order;
        if (s <= total) ++seen[s];
        if (!payload_intact(s, event.payload(), kSwapPayload, kSwapPayload)) ++corrupt;
        last = std::max(last, s);
        delivered.store(s, std::memory_order_release);
    }
    stop.store(true);
    producer.join();
    resizer.join();

    uint64_t missing = 0, duplicated = 0;
    for (uint64_t s = 1; s <= total; ++s) {
        if (seen[s] == 0) ++missing;
        if (seen[s] > 1) ++duplicated;
    }
    WARN("swap stress: " << total << " events, " << resizes << " resizes, reader generation changes "
                         << reader.stats().generation_changes << ", laps " << reader.stats().laps);
    REQUIRE(errors == 0);
    CHECK(last == total);
    CHECK(missing == 0);
    CHECK(duplicated == 0);
    CHECK(out_of_order == 0);
    CHECK(corrupt == 0);
    CHECK(reader.stats().laps == 0);
    CHECK(resizes >= 4);
    CHECK(reader.stats().generation_changes > 0);
}

TEST_CASE("a producer writing through a shrink leaves a gap-free suffix across the switch", "[swap][stress]") {
    // The swap happens while the producer is mid-stream: nothing emitted on the CPU between the
    // copy and the switch may go missing or appear twice (§5.1.9.4 "atomic per CPU").
    SyncPointGuard guard;
    const uint64_t total = 3'000;
    const uint64_t slow_from = total - 100;  // the last 100 events trickle in, so the swap lands among them
    auto set = make_ring_set(16 * kSmallRing);
    std::atomic<uint64_t> written{0};
    std::thread producer([&] {
        std::vector<uint8_t> payload(kSwapPayload);
        for (uint64_t s = 1; s <= total; ++s) {
            fill_payload(s, payload);
            write_one(*set, 0, payload);
            written.store(s, std::memory_order_release);
            if (s >= slow_from) std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
    });
    uint64_t at_switch = 0;  // last sequence written to the old ring
    base::sync::set_callback("RingSet::resize:after_switch", [&] { at_switch = written.load(); });
    while (written.load() < slow_from + 10) std::this_thread::yield();
    REQUIRE(set->resize(kSmallRing).ok());
    producer.join();

    RingReader reader = reader_of(*set, 0);
    const Delivery d = drain_checked(reader);
    CHECK(d.corrupt == 0);
    REQUIRE(!d.sequences.empty());
    for (size_t i = 1; i < d.sequences.size(); ++i) CHECK(d.sequences[i] == d.sequences[i - 1] + 1);
    CHECK(d.sequences.back() == total);
    INFO("switch after sequence " << at_switch << "; delivered " << d.sequences.front() << ".." << d.sequences.back());
    // The suffix spans the switch: survivors copied from the old ring, then the new writes.
    CHECK(d.sequences.front() <= at_switch);
    CHECK(at_switch < total);
    CHECK(d.sequences.size() * kSwapEventSize <= kSmallRing);
}
