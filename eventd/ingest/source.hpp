// Where eventd's records come from (docs/ARCHITECTURE.md "Ingest"): this host's KMES rings
// (KmesSource) or the JetStream stream a fleet's forwarders publish to
// (collector::CollectorSource). Both hand records to the shard writers through their handoffs;
// the daemon runs one startup sequence (PSD-008 §10.1) and one shutdown (§10.2) over either,
// and a shard writer never knows which one feeds it. A source that may deliver a record
// twice also supplies the writers' duplicate check (redelivery.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.hpp"
#include "eventd/ingest/shard_writer.hpp"
#include "eventd/ingest/synthetic.hpp"
#include "kmes/guid.hpp"
#include "store/sequence_ranges.hpp"

namespace eventd {

class Source {
public:
    virtual ~Source() = default;

    // §10.1 phases 3–4: reach the source. Afterwards run_id() and default_shard_count() hold.
    virtual base::Status open() = 0;
    // The id that keys the daemon's own records of this run: the KMES boot id, or one the
    // collector draws per run (its rows keep their hosts' boot ids).
    virtual const kmes::Guid& run_id() const = 0;
    // The shard count when StorageShards is 0.
    virtual uint32_t default_shard_count() const = 0;

    // §10.1 phase 6: start handing records to `writers` (by shard index; started already).
    // `accounted`: every shard file's sequence state at startup; it outlives the source.
    virtual base::Status start(const std::vector<ShardWriter*>& writers, const store::SequenceState& accounted) = 0;
    // For synthetic.startup (phase 7), once started: whether this run continues one the store
    // has seen (a restart within the KMES boot), and where each CPU resumed.
    virtual bool restart() const = 0;
    virtual std::vector<synthetic::CpuSequence> resume_points() const = 0;

    // §10.2 step 3: hand nothing more to the writers (a KMES source first drains every ring
    // to its end), then return. The writers finish after it; the source is destroyed after
    // them (a source may still need what their last commits settle).
    virtual void stop() = 0;

    // The CPUs whose highest stored sequence synthetic.shutdown reports (none for a collector).
    virtual std::vector<uint16_t> cpus() const = 0;
    // Records handed over so far (STATUS rates).
    virtual uint64_t records_in() const = 0;
    // STATUS: the daemon record's "mode", the source's own records, the one-line summary
    // (sd_notify STATUS=), and the lines of a diagnostic dump (SIGQUIT).
    virtual const char* mode() const = 0;
    virtual void add_status_records(std::vector<nlohmann::json>& out) const = 0;
    virtual std::string status_line() const = 0;
    virtual void dump_diagnostics() const = 0;

    // A descriptor main polls for POLLRDHUP: it hangs up when the source went away without
    // saying so (KMES: an attachment of eventd's own, when kmes-shimd is SIGKILLed); then
    // main calls hung_up(). -1: nothing to watch.
    virtual int watch_fd() const { return -1; }
    virtual void hung_up() {}
};

}  // namespace eventd
