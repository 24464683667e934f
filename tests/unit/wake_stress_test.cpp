// Sleep/wake stress of the notification handshake (DESIGN.md §7): a producer and a reader
// ping-pong one event at a time with random tiny pauses, so the write lands in every window
// of RingReader::wait. A watchdog fails the test if the reader is inside wait() while unread
// data has sat in its ring for more than 100 ms — the symptom of a lost wake-up.
//
// KMES_WAKE_CYCLES overrides the number of cycles (default 1 million); KMES_WAKE_ORDER=spec
// runs it with WaitOrder::spec_literal, which should fail (shows the stress has teeth).
#include <catch2/catch.hpp>

#include <immintrin.h>

#include <atomic>
#include <thread>

#include "ring_harness.hpp"

using namespace kmes;
using namespace kmes::test;
using namespace std::chrono_literals;

namespace {

const std::vector<uint8_t> kPayload = {0xc0};

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
    sync::set_callback("RingReader::wait:after_recheck", [&] {
        sync::clear_all();
        write_one(*set, 0, kPayload);
    });
    watchdog.entering_wait(reader.read_pos());
    const WaitResult result = reader.wait(400ms);
    watchdog.left_wait();
    watchdog.stop();
    CHECK(result == WaitResult::timed_out);
    CHECK(watchdog.violations() == 1);
}

TEST_CASE("a million sleep/wake cycles never leave the reader asleep with unread data", "[notification][stress]") {
    const uint64_t cycles = cycles_to_run();  // wait() calls of the reader
    auto set = make_ring_set(kSmallRing);
    ReaderOptions options;
    // KMES_WAKE_ORDER=spec runs the stress with the spec's literal order, to see it fail.
    const char* order = std::getenv("KMES_WAKE_ORDER");
    if (order && std::string_view(order) == "spec") options.wait_order = WaitOrder::spec_literal;
    RingReader reader = reader_of(*set, 0, options);
    SleepWatchdog watchdog(reader.mapping(), 100ms);
    std::atomic<uint64_t> delivered{0};
    std::atomic<bool> stop{false};

    // Chaos at the handshake steps: random sub-microsecond stalls between the reader's counter
    // read, its re-check and futex_wait, and between the producer's write_pos store and its
    // need_wake load, so writes land in every window rather than mostly after futex_wait.
    SyncPointGuard guard;
    uint64_t reader_rng = 7, producer_rng = 13;  // each touched by one thread only
    auto stall = [](uint64_t& rng, uint64_t one_in, uint64_t max_ns) {
        rng = mix(rng);
        if (rng % one_in == 0) busy_wait_ns((rng >> 16) % max_ns);
    };
    sync::set_callback("RingReader::wait:after_counter_read", [&] { stall(reader_rng, 2, 1'000); });
    sync::set_callback("RingReader::wait:after_recheck", [&] { stall(reader_rng, 2, 1'000); });  // spec order only
    sync::set_callback("RingReader::wait:before_futex_wait", [&] { stall(reader_rng, 2, 1'000); });
    sync::set_callback("ProducerRing::notify:before_need_wake_load", [&] { stall(producer_rng, 4, 500); });

    std::thread producer([&] {
        uint64_t rng = 99;
        for (uint64_t s = 1; !stop.load(std::memory_order_relaxed); ++s) {
            rng = mix(rng);
            // Mostly strict ping-pong (write once the reader has the previous event); sometimes
            // write while the reader is still on the previous one, so writes also land in its
            // drain and in the first steps of wait().
            const uint64_t lag = (rng % 4 == 0) ? 2 : 1;
            for (int spins = 0; delivered.load(std::memory_order_acquire) + lag < s; ++spins) {
                if (stop.load(std::memory_order_relaxed)) return;
                if (spins % 64 == 63)
                    std::this_thread::yield();
                else
                    _mm_pause();
            }
            // Random tiny pause: the write lands before, inside or after the reader's wait steps.
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
            write_one(*set, 0, kPayload);
        }
    });

    uint64_t waits = 0, woken = 0, data_ready = 0, timed_out = 0, bad_sequence = 0, errors = 0, last = 0;
    const auto started = std::chrono::steady_clock::now();
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
    stop.store(true);
    producer.join();
    watchdog.stop();
    sync::clear_all();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

    WARN("wake stress: " << waits << " wait() calls / " << last << " events in " << seconds << " s ("
                         << double(waits) / seconds << " cycles/s); futex_wait calls " << reader.stats().sleeps
                         << ", Woken " << woken << ", DataReady " << data_ready << ", TimedOut " << timed_out
                         << "; producer futex wakes " << set->ring(0)->futex_wake_calls()
                         << "; longest unread-while-asleep " << watchdog.longest_ms() << " ms; watchdog stalls "
                         << watchdog.stalls());
    REQUIRE(errors == 0);
    CHECK(watchdog.violations() == 0);
    CHECK(timed_out == 0);
    CHECK(bad_sequence == 0);
    CHECK(waits == cycles);
    CHECK(reader.stats().sleeps > 0);
}
