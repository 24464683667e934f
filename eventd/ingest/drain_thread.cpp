#include "eventd/ingest/drain_thread.hpp"

#include <poll.h>

#include <spdlog/spdlog.h>

#include "eventd/ingest/shard_routing.hpp"
#include "eventd/ingest/synthetic.hpp"
#include "base/thread_boundary.hpp"
#include "store/row_chain.hpp"

namespace eventd {
namespace {
constexpr size_t kChunk = 256;                              // events handed over per channel lock
// An idle drain sleeps until the shim wakes it: need_wake counts sleepers, so a wake-up is
// never lost to another consumer of the ring (docs/ABI.md §3). The bound is only a safety net
// against a foreign consumer clearing the count the spec's way (store 0): at 256 rings a 10 s
// bound alone cost 0.1 % of a core (docs/PERFORMANCE.md §9).
constexpr auto kIdleWait = std::chrono::seconds(60);
// How often stop() repeats its interrupt until the drain has ended (see RingReader::interrupt).
constexpr auto kStopRetry = std::chrono::milliseconds(1);

store::EventRow row_of(const kmes::EventView& e, const kmes::Guid& boot_id) {
    store::EventRow row;
    row.boot_id = boot_id;
    row.timestamp = e.timestamp();
    row.cpu_id = e.cpu_id();
    row.sequence = e.sequence();
    row.origin_class = e.origin_class();
    row.event_type = std::string(e.type());
    if (e.has_identity()) {
        row.effective_token = e.effective_token();
        row.true_token = e.true_token();
        row.process = e.process();
    } else {
        row.effective_token = row.true_token = row.process = kmes::Guid{};  // §3.1: zeros if unavailable
    }
    const auto payload = e.payload();
    if (!payload.empty()) row.payload = std::vector<uint8_t>(payload.begin(), payload.end());  // raw, never re-encoded
    // The row's part of its shard's chain, hashed here on this CPU's drain thread rather than
    // on the shard's writer (store/row_chain.hpp).
    row.content_digest = store::row_digest(row);
    return row;
}
}  // namespace

DrainThread::DrainThread(uint32_t cpu, kmes::RingReader reader, const kmes::Guid& boot_id,
                         store::SequenceRanges accounted, std::vector<ShardWriter*> shards,
                         std::function<void(const std::string&)> on_fatal)
    : cpu_(cpu),
      reader_(std::move(reader)),
      boot_id_(boot_id),
      tracker_(std::move(accounted)),
      resume_point_(tracker_.highest()),
      shards_(std::move(shards)),
      on_fatal_(std::move(on_fatal)),
      pending_(shards_.size()) {
    run_left_ = kRunLength;
}

DrainThread::~DrainThread() { stop(); }

void DrainThread::start() {
    thread_ = std::thread([this] {
        // A drain that stops is fatal either way (its ring is no longer read): the same path as
        // losing the ring, so main exits non-zero and eventd restarts.
        base::run_guarded(
            "drain thread of cpu " + std::to_string(cpu_), [this] { run(); },
            [this](const std::string& why) { on_fatal_(why); });
        ended_.store(true);
    });
}

void DrainThread::request_stop() {
    stopping_.store(true);
    // The drain may be asleep in reader_.wait() with no event coming: wake it.
    reader_.interrupt();
}

void DrainThread::stop() {
    if (!thread_.joinable()) return;
    request_stop();
    // Again until it has ended: an interrupt landing just before its futex_wait is lost.
    while (!ended_.load()) {
        std::this_thread::sleep_for(kStopRetry);
        reader_.interrupt();
    }
    thread_.join();
}

void DrainThread::run() {
    for (;;) {
        const bool stopping = stopping_.load();  // read before the cycle: a stop gets one more full drain
        if (!drain_available()) return;
        publish_ring_state();
        if (!flush() || stopping) return;
        // Looked at after a timed-out wait and when main saw the shim's connection hang up
        // (check_attachment: an idle drain sleeps for up to kIdleWait).
        const bool timed_out = reader_.wait(kIdleWait) == kmes::WaitResult::timed_out;
        if (!(timed_out || check_attachment_.load()) || !attachment_hung_up()) continue;
        // A SIGKILLed shim cannot retire its rings (docs/ABI.md "A stopping shim retires its
        // rings"): the ring is frozen — no generation change (§2.2.4) will ever come — and
        // only the attachment's hang-up tells; a new shim is a new KMES boot (DESIGN.md §2).
        // Drain what the ring still holds and hand it over first — drain_available() also
        // follows a generation change, so the hang-up of an attachment a swap replaced is not
        // taken for this — then leave as for a retired ring (EVENTD.md §13).
        if (!drain_available()) return;
        publish_ring_state();
        if (!flush()) return;
        if (!attachment_hung_up()) continue;  // the reader re-attached after a swap
        on_fatal_("cpu " + std::to_string(cpu_) +
                  ": kmes-shimd went away without retiring the ring (the attachment hung up; killed?)");
        return;
    }
}

void DrainThread::check_attachment() {
    check_attachment_.store(true);
    reader_.interrupt();
}

bool DrainThread::attachment_hung_up() const {
    const int fd = reader_.mapping().fd();
    if (fd < 0) return false;
    pollfd p{fd, POLLRDHUP, 0};
    return poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLRDHUP | POLLERR)) != 0;
}

bool DrainThread::drain_available() {
    for (;;) {
        auto next = reader_.next();
        if (!next.ok()) {
            // The shim stopped or restarted (a new KMES boot): eventd must start over.
            on_fatal_("cpu " + std::to_string(cpu_) + ": " + next.error().message);
            return false;
        }
        if (!next->has_value()) return true;
        const kmes::EventView& event = **next;
        const auto decision = tracker_.observe(event.sequence(), event.timestamp());
        for (const Gap& gap : decision.gaps) {  // §2.5.2, written before the revealing event
            route(HandoffItem{synthetic::gap(boot_id_, static_cast<uint16_t>(cpu_), gap.first, gap.last,
                                             gap.last_seen_timestamp, event.timestamp()),
                              Accounting{static_cast<uint16_t>(cpu_), gap.first, gap.last}});
            stats_.gaps.fetch_add(1, std::memory_order_relaxed);
            stats_.lost_events.fetch_add(gap.last - gap.first + 1, std::memory_order_relaxed);
        }
        stats_.last_sequence.store(event.sequence(), std::memory_order_relaxed);
        if (!decision.store) {
            stats_.skipped.fetch_add(1, std::memory_order_relaxed);
            continue;
        }
        // §2.2.3: the row owns a copy; nothing points into the ring.
        route(HandoffItem{row_of(event, boot_id_),
                          Accounting{static_cast<uint16_t>(cpu_), event.sequence(), event.sequence()}});
        stats_.events.fetch_add(1, std::memory_order_relaxed);
    }
}

void DrainThread::route(HandoffItem item) {
    if (shards_.size() > 1 && run_left_-- == 0) {  // next shard after a contiguous run
        current_shard_ = (current_shard_ + 1) % shards_.size();
        run_left_ = kRunLength - 1;
    }
    auto& chunk = pending_[current_shard_];
    chunk.push_back(std::move(item));
    if (chunk.size() >= kChunk) {
        publish_ring_state();
        // Blocks while the writer's channel is full: the ring absorbs meanwhile (§2.3.4).
        shards_[current_shard_]->handoff().push(chunk);
    }
}

void DrainThread::publish_ring_state() {
    const uint64_t capacity = reader_.capacity();
    const uint64_t read_pos = reader_.read_pos();
    const uint64_t write_pos = reader_.write_pos_now();
    stats_.capacity_bytes.store(capacity, std::memory_order_relaxed);
    stats_.read_pos.store(read_pos, std::memory_order_relaxed);
    stats_.write_pos.store(write_pos, std::memory_order_relaxed);
    // §3.3.4.1: the writers judge the fill (index builds yield, emergency shedding).
    const uint64_t fill = write_pos > read_pos ? write_pos - read_pos : 0;
    for (ShardWriter* shard : shards_) shard->report_ring_fill(fill, capacity);
}

bool DrainThread::flush() {
    for (size_t i = 0; i < pending_.size(); ++i)
        if (!pending_[i].empty() && !shards_[i]->handoff().push(pending_[i])) return false;
    return true;
}

}  // namespace eventd
