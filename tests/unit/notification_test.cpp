// The notification handshake (PSD-003 §5.1.9.2, §5.1.8 step 9) in the order of DESIGN.md §7,
// with the lost-wake-up interleaving forced deterministically through sync points.
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

#include "ring_harness.hpp"
#include "thread_state.hpp"

using namespace kmes;
using namespace kmes::test;
using namespace std::chrono_literals;

namespace {


void write_event(shim::RingSet& set) { REQUIRE(write_one(set, 0, kNilPayload) == 1); }

double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// reader.wait(timeout) on its own thread. The constructor returns once that wait has counted
// itself, passed its sync point before futex_wait (the caller holds a SyncPointGuard) and is
// blocked in futex(2).
class SleepingWait {
public:
    SleepingWait(RingReader& reader, std::chrono::milliseconds timeout) {
        base::sync::set_callback("RingReader::wait:before_futex_wait", [this] {
            if (std::this_thread::get_id() == thread_id_.load()) about_to_sleep_.store(true);
        });
        thread_ = std::thread([this, &reader, timeout] {
            tid_.store(current_tid());
            thread_id_.store(std::this_thread::get_id());
            result_ = reader.wait(timeout);
            woke_ = std::chrono::steady_clock::now();
        });
        while (!about_to_sleep_.load()) std::this_thread::sleep_for(1ms);
        CHECK(wait_until_in_futex(tid_.load()));
    }
    ~SleepingWait() { join(); }
    void join() {
        if (thread_.joinable()) thread_.join();
    }
    WaitResult result() { return join(), result_; }
    std::chrono::steady_clock::time_point woke() { return join(), woke_; }

private:
    std::atomic<std::thread::id> thread_id_{};
    std::atomic<pid_t> tid_{0};
    std::atomic<bool> about_to_sleep_{false};
    WaitResult result_ = WaitResult::data_ready;
    std::chrono::steady_clock::time_point woke_;
    std::thread thread_;
};

}  // namespace

TEST_CASE("a reader sleeping in wait() wakes on a write long before its timeout", "[notification]") {
    SyncPointGuard guard;
    auto set = make_ring_set(kSmallRing);
    RingReader reader = reader_of(*set, 0);
    SleepingWait sleeper(reader, 1s);
    const auto written = std::chrono::steady_clock::now();
    write_event(*set);
    const WaitResult result = sleeper.result();
    const auto woke = sleeper.woke();

    CHECK((result == WaitResult::woken || result == WaitResult::data_ready));
    CHECK(woke - written < 900ms);  // woken by the write, not by the 1 s timeout
    using Micros = std::chrono::duration<double, std::micro>;
    WARN("wake-up latency " << Micros(woke - written).count() << " µs");
    CHECK(set->ring(0)->futex_wake_calls() == 1);
    CHECK(drain_sequences(reader) == std::vector<uint64_t>{1});
}

TEST_CASE("with need_wake 0 the producer makes no futex call", "[notification]") {
    auto set = make_ring_set(kSmallRing);
    RingReader reader = reader_of(*set, 0);  // attached, draining, never waiting
    for (int i = 0; i < 10'000; ++i) {
        write_event(*set);
        if (i % 100 == 0) drain_sequences(reader);
    }
    CHECK(set->ring(0)->futex_wake_calls() == 0);
    CHECK(set->ring(0)->view().futex_counter().load() == 0);
}

TEST_CASE("with need_wake set the producer bumps futex_counter and wakes on every publish", "[notification]") {
    auto set = make_ring_set(kSmallRing);
    auto mapping = map_consumer(*set->ring(0));
    REQUIRE(mapping.ok());
    mapping->base()[KMES_OFF_NEED_WAKE] = 7;  // any non-zero value counts as 1 (§5.1.7)
    for (int i = 0; i < 10; ++i) write_event(*set);
    CHECK(set->ring(0)->futex_wake_calls() == 10);
    CHECK(set->ring(0)->view().futex_counter().load() == 10);

    mapping->base()[KMES_OFF_NEED_WAKE] = 0;
    write_event(*set);
    CHECK(set->ring(0)->futex_wake_calls() == 10);
}

TEST_CASE("a batch publishes with a single wake-up", "[notification]") {
    auto set = make_ring_set(kSmallRing);
    auto mapping = map_consumer(*set->ring(0));
    REQUIRE(mapping.ok());
    mapping->base()[KMES_OFF_NEED_WAKE] = 1;
    std::vector<shim::EventInput> batch(20, shim::EventInput{kType, kNilPayload});
    REQUIRE(set->write(0, KMES_ORIGIN_KACS, batch, shim::Identity{}) == 20);
    CHECK(set->ring(0)->futex_wake_calls() == 1);
}

TEST_CASE("the spec's literal wait order loses a wake-up when the write lands after the re-check",
          "[notification][lost-wakeup]") {
    // Demonstrates the bug DESIGN.md §7 fixes: need_wake = 1, re-check (empty), *write + wake*,
    // then the counter is read — already incremented — and futex_wait sleeps on the new value.
    SyncPointGuard guard;
    auto set = make_ring_set(kSmallRing);
    ReaderOptions options;
    options.wait_order = WaitOrder::spec_literal;
    RingReader reader = reader_of(*set, 0, options);
    base::sync::set_callback("RingReader::wait:after_recheck", [&] {
        base::sync::clear_all();  // once
        write_event(*set);
    });
    const auto t0 = std::chrono::steady_clock::now();
    const WaitResult result = reader.wait(300ms);
    CHECK(result == WaitResult::timed_out);
    CHECK(ms_since(t0) >= 250);
    CHECK(reader.write_pos_now() != reader.read_pos());  // the event sat there all along
    CHECK(drain_sequences(reader) == std::vector<uint64_t>{1});
}

TEST_CASE("the safe wait order sees a write that lands after the counter read", "[notification][lost-wakeup]") {
    SyncPointGuard guard;
    auto set = make_ring_set(kSmallRing);
    RingReader reader = reader_of(*set, 0);
    base::sync::set_callback("RingReader::wait:after_counter_read", [&] {
        base::sync::clear_all();
        write_event(*set);
    });
    const auto t0 = std::chrono::steady_clock::now();
    CHECK(reader.wait(5s) == WaitResult::data_ready);  // the final re-check finds it
    CHECK(ms_since(t0) < 4000);
    CHECK(reader.stats().sleeps == 0);
    CHECK(drain_sequences(reader) == std::vector<uint64_t>{1});
}

TEST_CASE("the safe wait order returns at once when the write lands just before futex_wait",
          "[notification][lost-wakeup]") {
    SyncPointGuard guard;
    auto set = make_ring_set(kSmallRing);
    RingReader reader = reader_of(*set, 0);
    base::sync::set_callback("RingReader::wait:before_futex_wait", [&] {
        base::sync::clear_all();
        write_event(*set);
    });
    const auto t0 = std::chrono::steady_clock::now();
    // The producer saw need_wake = 1 and bumped futex_counter past the value read before the
    // re-check, so futex_wait does not sleep.
    CHECK(reader.wait(5s) == WaitResult::woken);
    CHECK(ms_since(t0) < 4000);
    CHECK(set->ring(0)->futex_wake_calls() == 1);
    CHECK(drain_sequences(reader) == std::vector<uint64_t>{1});
}

// docs/ABI.md §3: need_wake counts the consumers about to sleep or sleeping. With the one flag
// of the spec, consumer A returning from its wait (here: a timeout) stored 0 over the 1 of
// consumer B still asleep; the producer then skipped the wake-up and B slept to its timeout.
TEST_CASE("two consumers of one CPU: one leaving its wait never cancels the other's wake-up", "[notification]") {
    SyncPointGuard guard;
    auto set = make_ring_set(kSmallRing);
    RingReader a = reader_of(*set, 0);
    RingReader b = reader_of(*set, 0);
    SleepingWait sleeping_b(b, 3s);
    const uint8_t* sleepers = a.mapping().base() + KMES_OFF_NEED_WAKE;  // the shared consumer page
    CHECK(*sleepers == 1);                        // B counted
    CHECK(a.wait(30ms) == WaitResult::timed_out);  // A sleeps beside B and leaves
    CHECK(*sleepers == 1);                        // … taking only its own count away
    const auto written = std::chrono::steady_clock::now();
    write_event(*set);

    CHECK(sleeping_b.result() == WaitResult::woken);
    CHECK(sleeping_b.woke() - written < 2s);  // by the write, not by its 3 s timeout
    CHECK(*sleepers == 0);
    CHECK(drain_sequences(b) == std::vector<uint64_t>{1});
}

TEST_CASE("interrupt() wakes a reader asleep in wait()", "[notification]") {
    SyncPointGuard guard;
    auto set = make_ring_set(kSmallRing);
    RingReader reader = reader_of(*set, 0);
    const auto started = std::chrono::steady_clock::now();
    SleepingWait sleeper(reader, 5s);
    reader.interrupt();
    CHECK(sleeper.result() == WaitResult::woken);
    CHECK(std::chrono::steady_clock::now() - started < 4s);
    CHECK(reader.mapping().base()[KMES_OFF_NEED_WAKE] == 0);
}
