#include "eventd/ingest/kmes_source.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include <spdlog/spdlog.h>

#include "base/guid_text.hpp"
#include "eventd/ingest/shard_routing.hpp"
#include "kmes/kmes.h"
#include "protocol/status.hpp"

namespace eventd {

KmesSource::KmesSource(std::string socket_path, std::function<void(const std::string&)> on_fatal)
    : socket_path_(std::move(socket_path)), on_fatal_(std::move(on_fatal)) {}

KmesSource::~KmesSource() {
    drains_.clear();  // stopped already (stop()), or never started
    if (watch_fd_ >= 0) close(watch_fd_);
}

base::Status KmesSource::open() {
    // Phase 3: boot boundary. The KMES boot id keys every row (DESIGN.md §2).
    if (kmes_boot_id(boot_id_.data()) != 0)
        return base::errno_error("cannot reach kmes-shimd at " + socket_path_ + " (kmes_boot_id)");
    uint64_t capacity = 0;
    watch_fd_ = kmes_attach(0, &capacity);  // only a liveness watch: failure is not fatal

    // Phase 4: attach every CPU's ring (cpu 0, 1, … until EINVAL); attach failure is fatal.
    for (uint32_t cpu = 0;; ++cpu) {
        auto reader = kmes::RingReader::open(cpu, kmes::ReaderOptions{});  // from tail_pos (§2.2.2)
        if (!reader) {
            if (reader.error().code == base::ErrorCode::invalid && cpu > 0) return {};  // past the last CPU
            return base::Error{reader.error().code, "cannot attach the KMES ring of cpu " + std::to_string(cpu) + ": " +
                                                        reader.error().message};
        }
        // Every ring must belong to the boot read in phase 3 (a shim restart in between would
        // mix two boots' sequences under one boot id).
        if (reader->mapping().boot_id() != boot_id_)
            return base::Error{ESTALE, "kmes-shimd restarted during eventd's startup; start eventd again"};
        readers_.push_back(std::move(*reader));
    }
}

base::Status KmesSource::start(const std::vector<ShardWriter*>& writers, const store::SequenceState& accounted) {
    const auto cpus = static_cast<uint32_t>(readers_.size());
    const auto shard_count = static_cast<uint32_t>(writers.size());
    for (const auto& [key, ranges] : accounted)
        if (key.boot_id == boot_id_) restart_ = true;  // this boot was ingested before
    spdlog::info("KMES boot {} ({}), {} CPU ring(s), {} shard(s)", base::guid_text(boot_id_),
                 restart_ ? "restart within the boot" : "new boot", cpus, shard_count);
    const auto routing = shards_of_cpus(cpus, shard_count);
    for (uint32_t cpu = 0; cpu < cpus; ++cpu) {
        std::vector<ShardWriter*> shards;
        for (uint32_t s : routing[cpu]) shards.push_back(writers[s]);
        store::SequenceRanges resume_from;
        if (auto it = accounted.find({boot_id_, static_cast<uint16_t>(cpu)}); it != accounted.end())
            resume_from = it->second;
        drains_.push_back(std::make_unique<DrainThread>(
            cpu, std::move(readers_[cpu]), boot_id_, std::move(resume_from), std::move(shards),
            [this](const std::string& why) {
                if (stopping_.load()) {  // the shim went away during our own shutdown
                    spdlog::info("final drain ended early: {}", why);
                    return;
                }
                on_fatal_("lost the KMES ring: " + why + "; exiting so eventd restarts on the current boot");
            }));
    }
    readers_.clear();
    for (auto& drain : drains_) drain->start();
    started_.store(true);
    return {};
}

std::vector<synthetic::CpuSequence> KmesSource::resume_points() const {
    std::vector<synthetic::CpuSequence> points;
    for (const auto& d : drains_) points.push_back({static_cast<uint16_t>(d->cpu()), d->resume_point()});
    return points;
}

void KmesSource::stop() {
    // Final drain (§10.2 step 3): every drain thread reads what is available, hands it over,
    // and ends — all asked first, so the rings are drained side by side.
    stopping_.store(true);
    for (auto& d : drains_) d->request_stop();
    for (auto& d : drains_) d->stop();
}

std::vector<uint16_t> KmesSource::cpus() const {
    std::vector<uint16_t> out;
    for (const auto& d : drains_) out.push_back(static_cast<uint16_t>(d->cpu()));
    return out;
}

uint64_t KmesSource::records_in() const {
    uint64_t events = 0;
    for (const auto& d : drains_) events += d->stats().events.load(std::memory_order_relaxed);
    return events;
}

void KmesSource::add_status_records(std::vector<nlohmann::json>& out) const {
    for (const auto& d : drains_) {
        const DrainStats& s = d->stats();
        const uint64_t capacity = s.capacity_bytes.load(std::memory_order_relaxed);
        const uint64_t read = s.read_pos.load(std::memory_order_relaxed);
        const uint64_t write = s.write_pos.load(std::memory_order_relaxed);
        const uint64_t lag = write > read ? write - read : 0;
        const double fill = capacity ? 100.0 * double(std::min(lag, capacity)) / double(capacity) : 0.0;
        protocol::status::Ring ring;
        ring.cpu = d->cpu();
        ring.capacity_bytes = capacity;
        ring.fill_percent = std::round(fill * 10) / 10;
        ring.reader_lag_bytes = lag;
        ring.last_sequence = s.last_sequence.load(std::memory_order_relaxed);
        ring.events = s.events.load(std::memory_order_relaxed);
        ring.skipped = s.skipped.load(std::memory_order_relaxed);
        ring.gaps = s.gaps.load(std::memory_order_relaxed);
        ring.lost_events = s.lost_events.load(std::memory_order_relaxed);
        out.push_back(protocol::status::to_record(ring));
    }
}

std::string KmesSource::status_line() const {
    uint64_t events = 0, lost = 0;
    for (const auto& d : drains_) {
        events += d->stats().events.load();
        lost += d->stats().lost_events.load();
    }
    return "ingested " + std::to_string(events) + " events, " + std::to_string(lost) + " lost (gaps)";
}

void KmesSource::dump_diagnostics() const {
    for (const auto& d : drains_) {
        const DrainStats& s = d->stats();
        spdlog::info("  cpu {}: events {}, skipped {}, gaps {} ({} lost), last sequence {}, resumed after {}", d->cpu(),
                     s.events.load(), s.skipped.load(), s.gaps.load(), s.lost_events.load(), s.last_sequence.load(),
                     d->resume_point());
    }
}

void KmesSource::hung_up() {
    if (!started_.load()) return;  // drains_ is being built
    for (auto& d : drains_) d->check_attachment();
}

}  // namespace eventd
