// A fleet's JetStream stream as eventd's source (ingest/source.hpp; docs/FORWARD.md
// "Collector"): the Collector fetches what the hosts' eventd-forward published and hands it
// to the shard writers, whose duplicate check it supplies (it is a RedeliveringSource). The
// rows keep their hosts' boot ids; the collector's own records (startup, shutdown, storage
// errors, configuration changes) carry a run id drawn at open(), as a boot would.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "eventd/collector/collector.hpp"
#include "eventd/collector/source_config.hpp"
#include "eventd/ingest/source.hpp"

namespace eventd::collector {

class CollectorSource final : public Source {
public:
    // `on_fatal`: the collector's thread died (eventd must fail and restart).
    CollectorSource(SourceConfig config, std::function<void(const std::string& why)> on_fatal);
    // The collector goes last: it acknowledges what the writers' final commits settled.
    ~CollectorSource() override = default;

    base::Status open() override;
    const kmes::Guid& run_id() const override { return run_id_; }
    uint32_t default_shard_count() const override;
    base::Status start(const std::vector<ShardWriter*>& writers, const store::SequenceState& accounted) override;
    bool restart() const override { return false; }  // every run is new: rows carry their hosts' boots
    std::vector<synthetic::CpuSequence> resume_points() const override { return {}; }
    void stop() override;

    std::vector<uint16_t> cpus() const override { return {}; }
    uint64_t records_in() const override { return collector_ ? collector_->received() : 0; }
    const char* mode() const override { return "collector"; }
    void add_status_records(std::vector<nlohmann::json>& out) const override;
    std::string status_line() const override;
    void dump_diagnostics() const override;

private:
    SourceConfig config_;
    std::function<void(const std::string&)> on_fatal_;
    kmes::Guid run_id_{};
    std::vector<ShardWriter*> writers_;
    std::unique_ptr<Collector> collector_;
};

}  // namespace eventd::collector
