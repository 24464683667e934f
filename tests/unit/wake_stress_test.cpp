// Sleep/wake stress of the notification handshake (DESIGN.md §7): a producer and a reader
// ping-pong one event at a time with random tiny pauses, so the write lands in every window
// of RingReader::wait. A watchdog fails the test if the reader is inside wait() while unread
// data has sat in its ring for more than a second — the symptom of a lost wake-up (as is a
// wait that times out: the producer only writes once the reader has the previous event).
//
// The same with two consumers of one CPU ping-ponging with the producer together: need_wake
// counts sleepers, so one consumer leaving its wait never cancels another's wake-up.
//
// KMES_WAKE_CYCLES overrides the number of cycles (default 1 million); KMES_WAKE_ORDER=spec
// runs it with WaitOrder::spec_literal, which should fail (shows the stress has teeth).
#include <catch2/catch.hpp>

#include <immintrin.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <string_view>
#include <thread>
#include <vector>

#include "ring_harness.hpp"

using namespace kmes;
using namespace kmes::test;
using namespace std::chrono_literals;

namespace {


// Watches one reader of one ring from its own thread.
class SleepWatchdog {
public:
    SleepWatchdog(const RingMapping& ring, std::chrono::milliseconds limit)
        : view_(detail::view_of(ring.base(), ring.capacity())), limit_ns_(uint64_t(limit.count()) * 1'000'000) {
        thread_ = std::thread([this] { run(); });
    }
    ~SleepWatchdog() { stop(); }

    // Called by the reader right before / after RingReader::wait.
    void entering_wait(uint64_t read_pos) {
        epoch_.fetch_add(1, std::memory_order_relaxed);
        read_pos_.store(read_pos, std::memory_order_relaxed);
        asleep_.store(true, std::memory_order_seq_cst);
    }
    void left_wait() { asleep_.store(false, std::memory_order_seq_cst); }

    void stop() {
        if (!thread_.joinable()) return;
        stop_.store(true);
        thread_.join();
    }
    uint64_t violations() const { return violations_.load(); }
    double longest_ms() const { return double(longest_ns_.load()) / 1e6; }
    uint64_t stalls() const { return stalls_.load(); }

private:
    void run() {
        bool pending = false;
        uint64_t pending_epoch = 0, since = 0, last_tick = now_ns();
        uint64_t flagged_epoch = ~0ull;
        while (!stop_.load()) {
            std::this_thread::sleep_for(2ms);
            const uint64_t now = now_ns();
            // If this thread itself was not scheduled for a while the machine stalled; start
            // measuring afresh rather than blame the reader for the stall.
            if (now - last_tick > 50'000'000) {
                stalls_.fetch_add(1);
                pending = false;
            }
            last_tick = now;
            const bool asleep = asleep_.load(std::memory_order_seq_cst);
            const uint64_t epoch = epoch_.load(std::memory_order_relaxed);
            const uint64_t read_pos = read_pos_.load(std::memory_order_relaxed);
            const bool unread = view_.write_pos().load(std::memory_order_acquire) != read_pos;
            if (!asleep || !unread) {
                pending = false;
                continue;
            }
            if (!pending || pending_epoch != epoch) {
                pending = true;
                pending_epoch = epoch;
                since = now;
                continue;
            }
            const uint64_t sat = now - since;
            if (sat > longest_ns_.load()) longest_ns_.store(sat);
            if (sat > limit_ns_ && flagged_epoch != epoch) {
                flagged_epoch = epoch;
                violations_.fetch_add(1);
            }
        }
    }

    detail::RingView view_;
    uint64_t limit_ns_;
    std::atomic<bool> asleep_{false}, stop_{false};
    std::atomic<uint64_t> epoch_{0}, read_pos_{0};
    std::atomic<uint64_t> violations_{0}, longest_ns_{0}, stalls_{0};
    std::thread thread_;
};

uint64_t cycles_to_run() {
    const char* env = std::getenv("KMES_WAKE_CYCLES");
    return env ? std::strtoull(env, nullptr, 10) : 1'000'000;
}

void busy_wait_ns(uint64_t ns) {
    const uint64_t until = now_ns() + ns;
    while (now_ns() < until) _mm_pause();
}

}  // namespace

TEST_CASE("the watchdog flags a reader asleep while data waits in its ring", "[notification][stress]") {
    // Self-test with the spec-literal order and the lost wake-up forced: if the watchdog could
    // not see this, its silence in the stress below would mean nothing.
    SyncPointGuard guard;
    auto set = make_ring_set(kSmallRing);
    ReaderOptions options;
    options.wait_order = WaitOrder::spec_literal;
    RingReader reader = reader_of(*set, 0, options);
    SleepWatchdog watchdog(reader.mapping(), 100ms);
    base::sync::set_callback("RingReader::wait:after_recheck", [&] {
        base::sync::clear_all();
        write_one(*set, 0, kNilPayload);
    });
    watchdog.entering_wait(reader.read_pos());
    const WaitResult result = reader.wait(400ms);
    watchdog.left_wait();
    watchdog.stop();
    CHECK(result == WaitResult::timed_out);
    CHECK(watchdog.violations() == 1);
}

// A lost wake-up leaves a reader asleep until its 2 s timeout while the producer waits for it.
// A woken reader can also wait for a CPU: on a loaded 2-core machine that took up to 230 ms,
// so the limit sits well above scheduling delays and well below the timeout.
constexpr auto kAsleepWithDataLimit = 1000ms;

// One consumer of the stress: a reader of ring 0 in its own thread with its own watchdog,
// waiting whenever it has read everything, for `cycles` wait() calls.
struct StressConsumer {
    RingReader reader;
    SleepWatchdog watchdog;
    std::atomic<uint64_t> delivered{0};  // highest sequence read
    uint64_t waits = 0, woken = 0, data_ready = 0, timed_out = 0, bad_sequence = 0, errors = 0;

    StressConsumer(shim::RingSet& set, const ReaderOptions& options)
        : reader(reader_of(set, 0, options)), watchdog(reader.mapping(), kAsleepWithDataLimit) {}

    void run(uint64_t cycles) {
        uint64_t last = 0;
        while (waits < cycles) {
            auto e = reader.next();
            if (!e.ok()) {
                ++errors;
                break;
            }
            if (e.value()) {
                const uint64_t s = e.value()->sequence();
                if (s != last + 1) ++bad_sequence;
                last = s;
                delivered.store(s, std::memory_order_release);
                continue;
            }
            watchdog.entering_wait(reader.read_pos());
            const WaitResult r = reader.wait(2s);
            watchdog.left_wait();
            ++waits;
            if (r == WaitResult::woken)
                ++woken;
            else if (r == WaitResult::data_ready)
                ++data_ready;
            else
                ++timed_out;
            if (watchdog.violations() > 10) break;  // broken: stop early with the evidence
        }
        // Done: from now on the producer does not wait for this consumer.
        delivered.store(UINT64_MAX, std::memory_order_release);
        watchdog.stop();
    }
};

// The producer writes event s once every consumer has read s − 1 (sometimes s − 2), with random
// tiny pauses, so its write lands in every window of every consumer's wait. With several
// consumers of one CPU their waits also overlap in every way — the case where the spec's single
// need_wake flag lost wake-ups (one consumer clearing it while another slept; docs/ABI.md §3).
void stress(unsigned consumer_count, uint64_t cycles) {
    auto set = make_ring_set(kSmallRing);
    ReaderOptions options;
    // KMES_WAKE_ORDER=spec runs the stress with the spec's literal order, to see it fail.
    const char* order = std::getenv("KMES_WAKE_ORDER");
    if (order && std::string_view(order) == "spec") options.wait_order = WaitOrder::spec_literal;
    std::vector<std::unique_ptr<StressConsumer>> consumers;
    for (unsigned i = 0; i < consumer_count; ++i) consumers.push_back(std::make_unique<StressConsumer>(*set, options));
    std::atomic<bool> stop{false};
    auto slowest = [&] {
        uint64_t v = UINT64_MAX;
        for (const auto& c : consumers) v = std::min(v, c->delivered.load(std::memory_order_acquire));
        return v;
    };

    // Chaos at the handshake steps: random sub-microsecond stalls between the reader's counter
    // read, its re-check and futex_wait, and between the producer's write_pos store and its
    // need_wake load, so writes land in every window rather than mostly after futex_wait.
    SyncPointGuard guard;
    std::atomic<uint64_t> reader_rng{7};
    uint64_t producer_rng = 13;  // touched by the producer only
    auto stall = [](uint64_t rng, uint64_t one_in, uint64_t max_ns) {
        if (rng % one_in == 0) busy_wait_ns((rng >> 16) % max_ns);
    };
    auto reader_stall = [&] { stall(mix(reader_rng.fetch_add(1, std::memory_order_relaxed)), 2, 1'000); };
    base::sync::set_callback("RingReader::wait:after_counter_read", reader_stall);
    base::sync::set_callback("RingReader::wait:after_recheck", reader_stall);  // spec order only
    base::sync::set_callback("RingReader::wait:before_futex_wait", reader_stall);
    base::sync::set_callback("ProducerRing::notify:before_need_wake_load", [&] {
        producer_rng = mix(producer_rng);
        stall(producer_rng, 4, 500);
    });

    std::thread producer([&] {
        uint64_t rng = 99;
        for (uint64_t s = 1; !stop.load(std::memory_order_relaxed); ++s) {
            rng = mix(rng);
            // Mostly strict ping-pong (write once every reader has the previous event);
            // sometimes write while one is still on the previous one, so writes also land in
            // its drain and in the first steps of wait().
            const uint64_t lag = (rng % 4 == 0) ? 2 : 1;
            for (int spins = 0; slowest() != UINT64_MAX && slowest() + lag < s; ++spins) {
                if (stop.load(std::memory_order_relaxed)) return;
                if (spins % 64 == 63)
                    std::this_thread::yield();
                else
                    _mm_pause();
            }
            if (slowest() == UINT64_MAX) return;  // every consumer finished
            // Random tiny pause: the write lands before, inside or after the readers' wait steps.
            switch ((rng >> 8) % 4) {
                case 0:
                    break;
                case 1:
                    busy_wait_ns((rng >> 16) % 200);
                    break;
                case 2:
                    busy_wait_ns((rng >> 16) % 2'000);
                    break;
                default:
                    busy_wait_ns((rng >> 16) % 10'000);
                    break;
            }
            write_one(*set, 0, kNilPayload);
        }
    });

    const auto started = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (auto& c : consumers) threads.emplace_back([&c, cycles] { c->run(cycles); });
    for (auto& t : threads) t.join();
    stop.store(true);
    producer.join();
    base::sync::clear_all();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

    for (size_t i = 0; i < consumers.size(); ++i) {
        const StressConsumer& c = *consumers[i];
        INFO("consumer " << i);
        WARN("wake stress, consumer " << i + 1 << " of " << consumers.size() << ": " << c.waits << " wait() calls in "
                                      << seconds << " s (" << double(c.waits) / seconds << " cycles/s); futex_wait calls "
                                      << c.reader.stats().sleeps << ", Woken " << c.woken << ", DataReady "
                                      << c.data_ready << ", TimedOut " << c.timed_out << "; producer futex wakes "
                                      << set->ring(0)->futex_wake_calls() << "; longest unread-while-asleep "
                                      << c.watchdog.longest_ms() << " ms; watchdog stalls " << c.watchdog.stalls());
        REQUIRE(c.errors == 0);
        CHECK(c.watchdog.violations() == 0);
        CHECK(c.timed_out == 0);
        CHECK(c.bad_sequence == 0);
        CHECK(c.waits == cycles);
        CHECK(c.reader.stats().sleeps > 0);
    }
}

TEST_CASE("a million sleep/wake cycles never leave the reader asleep with unread data", "[notification][stress]") {
    stress(1, cycles_to_run());
}

TEST_CASE("two consumers of one CPU: sleep/wake cycles never leave either asleep with unread data",
          "[notification][stress]") {
    // Half the cycles each: two consumers on two cores take about as long as one.
    stress(2, cycles_to_run() / 2);
}
