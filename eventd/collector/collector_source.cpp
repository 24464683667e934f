#include "eventd/collector/collector_source.hpp"

#include <sys/random.h>

#include <algorithm>
#include <thread>

#include <spdlog/spdlog.h>

#include "base/guid_text.hpp"
#include "nats/server_list.hpp"

namespace eventd::collector {

CollectorSource::CollectorSource(SourceConfig config, std::function<void(const std::string&)> on_fatal)
    : config_(std::move(config)), on_fatal_(std::move(on_fatal)) {}

base::Status CollectorSource::open() {
    // Nothing to reach yet: NATS is connected by the collector's own thread, which retries
    // with backoff (a collector starts while NATS is down, and catches up later).
    if (getrandom(run_id_.data(), run_id_.size(), 0) != ssize_t(run_id_.size()))
        return base::errno_error("getrandom for the collector's run id");
    return {};
}

uint32_t CollectorSource::default_shard_count() const { return std::max(1u, std::thread::hardware_concurrency()); }

base::Status CollectorSource::start(const std::vector<ShardWriter*>& writers, const store::SequenceState& accounted) {
    spdlog::info("collector mode: run {}, {} shard(s), records from stream {} at {}", base::guid_text(run_id_),
                 writers.size(), config_.stream, nats::servers_text(config_.nats_url));
    writers_ = writers;
    // What the store's files hold at startup (historical ones too) is not stored again.
    collector_ = std::make_unique<Collector>(config_, writers, &accounted, run_id_, on_fatal_);
    collector_->start();
    return {};
}

void CollectorSource::stop() {
    if (!collector_) return;
    // The writers' channels close first, so a collector blocked on a full one returns; what
    // it still held is not acknowledged and comes again. Its session stays for the last
    // acknowledgements (the destructor, after the writers' final commits).
    collector_->request_stop();
    for (ShardWriter* w : writers_) w->request_finish();
    collector_->stop_fetching();
}

void CollectorSource::add_status_records(std::vector<nlohmann::json>& out) const {
    if (collector_) out.push_back(collector_->status_record());
}

std::string CollectorSource::status_line() const { return "collected " + std::to_string(records_in()) + " records"; }

void CollectorSource::dump_diagnostics() const { spdlog::info("  collector: {}", status_line()); }

}  // namespace eventd::collector
