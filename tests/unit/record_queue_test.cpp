// The audit source's receive queue (kmes-shim/audit/record_queue.hpp): one reader thread
// pushing rounds as fast as it can, one mapping thread popping them slowly. Every record pushed
// is either popped, in order, or counted as dropped; control replies are never dropped.
#include <catch2/catch.hpp>

#include <libaudit.h>

#include <atomic>
#include <charconv>
#include <string>
#include <thread>
#include <vector>

#include "audit/record_queue.hpp"

namespace {

using kmes::audit::RecordQueue;
using kmes::audit::RecordRound;

// A round of `records` SYSCALL records numbered from `first` (their text is the number), and
// one AUDIT_GET reply.
RecordRound round_of(uint64_t first, size_t records) {
    RecordRound round;
    for (size_t i = 0; i < records; ++i) round.add(AUDIT_SYSCALL, std::to_string(first + i) + std::string(200, ' '));
    round.add(AUDIT_GET, "status");
    return round;
}

uint64_t number(std::string_view text) {
    uint64_t n = 0;
    std::from_chars(text.data(), text.data() + text.size(), n);
    return n;
}

}  // namespace

TEST_CASE("a full queue refuses whole rounds of records, counts them, and keeps control replies", "[record_queue]") {
    RecordQueue queue(4096);
    queue.push(round_of(0, 30));   // ~6 KB: an empty queue takes any round
    queue.push(round_of(30, 5));   // over the limit: refused
    CHECK(queue.take_dropped() == 5);
    CHECK(queue.take_dropped() == 0);
    std::vector<RecordRound> rounds;
    REQUIRE(queue.pop(rounds, std::chrono::milliseconds(0)));
    REQUIRE(rounds.size() == 2);
    CHECK(rounds[0].records() == 30);
    CHECK(rounds[1].records() == 0);  // the refused round's AUDIT_GET reply
    REQUIRE(rounds[1].messages().size() == 1);
    CHECK(rounds[1].messages()[0].type == AUDIT_GET);
    queue.close();
    rounds.clear();
    CHECK_FALSE(queue.pop(rounds, std::chrono::milliseconds(0)));
}

TEST_CASE("stress: a fast reader and a slow mapper lose nothing uncounted and keep the order", "[record_queue]") {
    // Pairing under test: push's unlock (release) → pop's lock (acquire) publishes the round's
    // bytes; close() → pop() returning false ends the consumer after the last round.
    constexpr uint64_t kRounds = 20000;
    RecordQueue queue(64 * 1024);
    std::atomic<uint64_t> pushed{0}, rounds_pushed{0};
    std::thread reader([&] {
        uint64_t next = 0;
        for (uint64_t r = 0; r < kRounds; ++r) {
            const size_t records = 1 + r % 17;
            queue.push(round_of(next, records));
            next += records;
            rounds_pushed.store(r + 1, std::memory_order_release);
        }
        pushed = next;
        queue.close();
    });
    uint64_t received = 0, dropped = 0, controls = 0, last = 0;
    bool ordered = true, first = true;
    std::vector<RecordRound> rounds;
    // The mapper starts late: 1,000 rounds (~1.8 MB) have been offered to a 64 KiB queue, so it
    // did refuse some, however fast each thread happens to run (under ASan the reader was once
    // the slower one and the queue never filled).
    while (rounds_pushed.load(std::memory_order_acquire) < 1000)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    for (uint64_t spin = 0;; ++spin) {
        rounds.clear();
        if (!queue.pop(rounds, std::chrono::milliseconds(50))) break;
        for (const RecordRound& round : rounds)
            for (const auto& m : round.messages()) {
                if (m.type == AUDIT_GET) {
                    ++controls;
                    continue;
                }
                const uint64_t n = number(round.payload(m));
                ordered &= first || n > last;
                first = false;
                last = n;
                ++received;
            }
        dropped += queue.take_dropped();
        if (spin % 8 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));  // a slow mapper
    }
    reader.join();
    dropped += queue.take_dropped();
    CHECK(ordered);
    CHECK(received + dropped == pushed.load());
    CHECK(dropped > 0);   // the queue did fill: the test exercised refusal
    CHECK(received > 0);
    CHECK(controls == kRounds);  // every round's control reply came through
}
