// This host's KMES rings as eventd's source (source.hpp): the boot boundary and the attach
// of every CPU's ring (PSD-008 §10.1 phases 3–4), one drain thread per ring (drain_thread.hpp)
// routed to its shards (shard_routing.hpp), and the liveness watch that tells idle drains of
// a SIGKILLed kmes-shimd.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "eventd/ingest/drain_thread.hpp"
#include "eventd/ingest/source.hpp"
#include "kmes/ring_reader.hpp"

namespace eventd {

class KmesSource final : public Source {
public:
    // `socket_path`: kmes-shimd's socket, for messages (libkmes finds it by itself).
    // `on_fatal`: a ring is lost for good (the shim stopped or restarted) or a drain thread
    // died; eventd must exit and restart. Not called for what happens after stop().
    KmesSource(std::string socket_path, std::function<void(const std::string& why)> on_fatal);
    ~KmesSource() override;

    base::Status open() override;
    const kmes::Guid& run_id() const override { return boot_id_; }
    uint32_t default_shard_count() const override { return static_cast<uint32_t>(readers_.size()); }
    base::Status start(const std::vector<ShardWriter*>& writers, const store::SequenceState& accounted) override;
    bool restart() const override { return restart_; }
    std::vector<synthetic::CpuSequence> resume_points() const override;
    void stop() override;

    std::vector<uint16_t> cpus() const override;
    uint64_t records_in() const override;
    const char* mode() const override { return "host"; }
    void add_status_records(std::vector<nlohmann::json>& out) const override;
    std::string status_line() const override;
    void dump_diagnostics() const override;
    int watch_fd() const override { return watch_fd_; }
    void hung_up() override;

private:
    std::string socket_path_;
    std::function<void(const std::string&)> on_fatal_;
    kmes::Guid boot_id_{};
    std::vector<kmes::RingReader> readers_;  // attached in open(), moved into drains_ by start()
    std::vector<std::unique_ptr<DrainThread>> drains_;
    bool restart_ = false;
    int watch_fd_ = -1;                  // an attachment to ring 0 nobody reads: hangs up when the shim dies
    std::atomic<bool> started_{false};   // drains_ is complete (hung_up may look at it)
    std::atomic<bool> stopping_{false};  // stop() called: a lost ring is no failure any more
};

}  // namespace eventd
