// The STATUS records (docs/QUERY-SERVER.md "Status"): one schema for eventd, which writes them,
// and for whoever reads them (eventctl status, its OpenMetrics text, the tests). Each record
// kind is a struct; its members are the record's keys (nlohmann's macros below name each
// member once), and `kind` says which record it is. Reading tolerates what a newer or older
// eventd adds or leaves out: an unknown key is ignored, a missing one keeps the member's
// default. kVersion, in the daemon record, changes when a key changes meaning or type.
#pragma once

#include <cerrno>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.hpp"

// std::optional as null or the value (nlohmann 3.11 has no serializer for it).
NLOHMANN_JSON_NAMESPACE_BEGIN
template <class T>
struct adl_serializer<std::optional<T>> {
    static void to_json(json& j, const std::optional<T>& v) {
        if (v)
            j = *v;
        else
            j = nullptr;
    }
    static void from_json(const json& j, std::optional<T>& v) {
        if (j.is_null())
            v.reset();
        else
            v = j.get<T>();
    }
};
NLOHMANN_JSON_NAMESPACE_END

namespace protocol::status {

inline constexpr uint32_t kVersion = 1;

// eventd itself.
struct Daemon {
    static constexpr const char* kind = "daemon";
    uint32_t version = kVersion;
    std::string boot_id;     // the KMES boot, or the collector's run id
    int64_t started_ns = 0;  // wall clock
    int64_t uptime_s = 0;
    std::string mode;   // "host" or "collector"
    uint64_t cpus = 0;  // rings drained (0 for a collector)
    uint64_t shards = 0;
};

// One KMES ring (one per CPU), as of its drain thread's last look.
struct Ring {
    static constexpr const char* kind = "ring";
    uint32_t cpu = 0;
    uint64_t capacity_bytes = 0;
    double fill_percent = 0;  // written and not yet read, of the capacity
    uint64_t reader_lag_bytes = 0;
    uint64_t last_sequence = 0;
    uint64_t events = 0;       // handed to the writers
    uint64_t skipped = 0;      // already accounted at startup
    uint64_t gaps = 0;         // synthetic.gap records
    uint64_t lost_events = 0;  // in those gaps
};

// One shard file and its writer.
struct Shard {
    static constexpr const char* kind = "shard";
    uint32_t shard = 0;
    std::string file;
    std::optional<uint64_t> rows;  // null: not counted within the time budget
    uint64_t rows_written = 0;     // since eventd started
    uint64_t bytes = 0;            // the file and its WAL
    std::optional<uint64_t> last_commit_ns;
    uint64_t batches = 0;
    double avg_batch_size = 0;
    uint64_t last_batch_size = 0;
    double commit_latency_ms = 0;
    uint64_t commit_ns_total = 0;
    uint64_t failed_batches = 0;
    uint64_t lost_events = 0;  // in failed batches
    uint64_t queued = 0;       // handed over, not yet in a batch
};

// One shard's secondary indexes (PSD-008 §3.3); lists as comma-separated text, "none" if empty.
struct ShardIndexes {
    static constexpr const char* kind = "shard_indexes";
    uint32_t shard = 0;
    std::string indexes;
    std::string missing;  // desired, not (yet) in this shard
    std::optional<std::string> building;
    uint64_t builds_started = 0;
    uint64_t builds_done = 0;
    uint64_t builds_cancelled = 0;
    uint64_t builds_failed = 0;
    uint64_t dropped = 0;
    uint64_t sheds_graduated = 0;
    uint64_t sheds_emergency = 0;
    uint64_t restored = 0;
};

// Retention passes since eventd started (PSD-008 §3.4).
struct Retention {
    static constexpr const char* kind = "retention";
    uint64_t runs = 0;
    uint64_t deleted_rows = 0;
    std::optional<uint64_t> last_run_ns;
};

// Tamper evidence (issue 28; docs/STORE.md §8): whether eventd seals the store, and how.
struct Sealing {
    static constexpr const char* kind = "sealing";
    bool sealed = false;
    std::optional<std::string> problem;  // why not: no sealing.key, or what is wrong with it
    std::optional<uint64_t> epoch;       // the current key's epoch
    uint64_t epoch_seconds = 0;
    std::optional<uint64_t> keys_end_ns;  // when the last epoch with a key ends
    uint64_t checkpoint_interval_s = 0;
    uint64_t checkpoints = 0;                    // committed by this run, all shards
    std::optional<uint64_t> last_checkpoint_ns;  // the newest of them, wall clock
};

// The read-path access policy in force (docs/ACCESS-CONTROL.md), as its last load (startup or
// reload) made it. Names resolve at that load: what did not resolve is counted here (issue 39).
struct AccessPolicy {
    static constexpr const char* kind = "access_policy";
    uint64_t loaded_ns = 0;
    bool refused = false;                       // the configured policy was refused: only root reads
    std::optional<std::string> problem;         // why, when refused
    uint64_t patterns = 0;                      // Security.Events patterns in force
    uint64_t warnings = 0;                      // logged at the load (unknown names, no "*", …)
    uint64_t deny_failing_closed = 0;           // deny entries denying everyone: a name did not resolve
    std::optional<std::string> failing_closed;  // which ("…pattern 'kacs', entry 1 (user:late)"; "; "), nil when none
};

// Records per second in (from the source) and out (committed), over the last `window_s`.
struct Rates {
    static constexpr const char* kind = "rates";
    double events_in_per_s = 0;
    double events_out_per_s = 0;
    double window_s = 0;
};

// The query server: connections, refusals by limit, the limits in force.
struct Queries {
    static constexpr const char* kind = "queries";
    uint32_t active = 0;
    uint32_t streaming = 0;
    uint64_t accepted_total = 0;
    uint64_t refused_total = 0;
    uint64_t refused_concurrency = 0;
    uint64_t refused_streaming = 0;
    uint64_t refused_per_user = 0;
    uint64_t refused_streaming_per_user = 0;
    uint64_t waited_running_per_user = 0;  // queries that waited for MaxRunningQueriesPerUser
    uint64_t over_group_budget = 0;        // queries ended by MaxQueryGroupBytes
    uint64_t timeouts = 0;
    uint64_t dropped_streams = 0;
    uint64_t errors = 0;
    uint32_t max_concurrent_queries = 0;
    uint32_t max_streaming_queries = 0;
    uint32_t max_queries_per_user = 0;
    uint32_t max_streaming_queries_per_user = 0;
    uint32_t admin_reserved_queries = 0;
    uint32_t max_running_queries_per_user = 0;
    uint64_t max_query_group_bytes = 0;
};

// A collector's JetStream source (collector mode), in the place of a host's rings.
struct Collector {
    static constexpr const char* kind = "collector";
    std::string state;  // starting, connecting, connected, backing off, stopped
    std::string nats_url;
    std::string stream;
    std::string durable;
    std::optional<int64_t> pending;  // the consumer's lag as of its last look; null: not known yet
    std::optional<int64_t> ack_pending;
    std::optional<int64_t> redelivered;
    uint64_t received = 0;    // records (a message packs one or more)
    uint64_t messages = 0;    // messages received (refused ones not counted)
    uint64_t duplicates = 0;  // records found stored already, not stored again
    uint64_t acked = 0;       // messages acknowledged
    uint64_t uncommitted = 0;  // records delivered, held, not yet committed
    uint64_t redelivery_requested = 0;  // messages
    uint64_t refused = 0;               // messages
    uint64_t sessions = 0;
    std::optional<uint64_t> last_received_ns;
    std::optional<std::string> last_error;
};

// Adaptive indexing, policy half (EVENTD.md §16): its settings and last pass, the desired
// index set and the most queried fields.
struct DesiredIndex {
    std::string field;
    uint64_t priority = 0;       // 0 = most important
    bool is_expression = false;  // a payload path
    bool manual = false;         // added by EVENTS INDEX
};
struct FieldCount {
    std::string field;
    uint64_t query_count = 0;
    std::optional<int64_t> window_start_ns;  // null: counted only since the last pass
};
struct IndexPolicy {
    static constexpr const char* kind = "index_policy";
    std::optional<int64_t> last_recompute_ns;  // null before the first pass
    double interval_s = 0;
    double window_s = 0;
    uint64_t create_threshold = 0;
    uint64_t drop_threshold = 0;
    std::optional<std::string> meta_db;  // its path; null while unusable
    std::optional<std::string> meta_db_problem;
    std::vector<DesiredIndex> desired;  // most important first
    std::vector<FieldCount> counters;   // the most queried fields first
    uint64_t counted_fields = 0;
    uint64_t not_counted = 0;  // bumps lost to the field cap
};

// eventd-forward's own status (docs/FORWARD.md "Status"): not a STATUS record of eventd's but
// the file the forwarder rewrites every second (StateDirectory/status.json), which
// `eventd-forward --status` reads back.
struct Forwarder {
    static constexpr const char* kind = "forwarder";
    std::string state = "starting";  // connecting, forwarding, backing off, stopped
    std::string last_error;          // why the last session ended ("" none)
    int64_t last_error_ns = 0;       // wall clock of last_error
    bool caught_up = false;          // the stream's catch-up is over: records are live
    uint64_t published = 0;          // records, every session's, since start
    uint64_t acked = 0;              // records
    uint64_t duplicates = 0;              // records of messages JetStream said it already held (replays)
    uint64_t pending = 0;                 // records published, not yet acknowledged
    uint64_t messages = 0;                // messages published (each packs one or more records)
    int64_t backlog = -1;                 // matching records eventd stores after the saved cursor (-1: not known)
    int64_t backlog_ns = 0;               // wall clock of that count
    uint64_t reconnects = 0;              // sessions started after the first
    uint64_t gaps = 0;                    // synthetic.forward_gap records published
    uint64_t rejected = 0;                // records too large for the server: synthetic.forward_rejected instead
    std::string last_rejected;            // the last of them: its type and id
    int64_t last_acked_timestamp_ns = 0;  // event time of the newest acknowledged record
    int64_t cursor_saved_ns = 0;          // wall clock of the last cursor persisted
    int64_t updated_ns = 0;               // wall clock of this status
    int pid = 0;
};

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Daemon, version, boot_id, started_ns, uptime_s, mode, cpus, shards)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Ring, cpu, capacity_bytes, fill_percent, reader_lag_bytes,
                                                last_sequence, events, skipped, gaps, lost_events)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Shard, shard, file, rows, rows_written, bytes, last_commit_ns, batches,
                                                avg_batch_size, last_batch_size, commit_latency_ms, commit_ns_total,
                                                failed_batches, lost_events, queued)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ShardIndexes, shard, indexes, missing, building, builds_started,
                                                builds_done, builds_cancelled, builds_failed, dropped, sheds_graduated,
                                                sheds_emergency, restored)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Retention, runs, deleted_rows, last_run_ns)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Sealing, sealed, problem, epoch, epoch_seconds, keys_end_ns,
                                                checkpoint_interval_s, checkpoints, last_checkpoint_ns)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(AccessPolicy, loaded_ns, refused, problem, patterns, warnings,
                                                deny_failing_closed, failing_closed)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Rates, events_in_per_s, events_out_per_s, window_s)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Queries, active, streaming, accepted_total, refused_total,
                                                refused_concurrency, refused_streaming, refused_per_user,
                                                refused_streaming_per_user, waited_running_per_user, over_group_budget,
                                                timeouts, dropped_streams, errors, max_concurrent_queries,
                                                max_streaming_queries, max_queries_per_user,
                                                max_streaming_queries_per_user, admin_reserved_queries,
                                                max_running_queries_per_user, max_query_group_bytes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Collector, state, nats_url, stream, durable, pending, ack_pending,
                                                redelivered, received, messages, duplicates, acked, uncommitted,
                                                redelivery_requested, refused, sessions, last_received_ns, last_error)

// A reader's reference to one key of one record kind, checked by the compiler: a member that
// R does not have does not compile, so every key a reader names (eventctl's views, OpenMetrics,
// the tests) is one of the schema's — the member's name is the key, as in the macros above.
struct Key {
    const char* kind;
    const char* key;
};
#define EVENTD_STATUS_KEY(R, member) (::protocol::status::Key{R::kind, EVENTD_STATUS_MEMBER(R, member)})
// The key alone, also of the records nested in one (IndexPolicy's desired and counters).
#define EVENTD_STATUS_MEMBER(R, member) (static_cast<void>(&R::member), #member)

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Forwarder, state, last_error, last_error_ns, caught_up, published, messages,
                                                acked, duplicates, pending, backlog, backlog_ns, reconnects, gaps,
                                                rejected, last_rejected, last_acked_timestamp_ns, cursor_saved_ns,
                                                updated_ns, pid)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(DesiredIndex, field, priority, is_expression, manual)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(FieldCount, field, query_count, window_start_ns)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(IndexPolicy, last_recompute_ns, interval_s, window_s, create_threshold,
                                                drop_threshold, meta_db, meta_db_problem, desired, counters,
                                                counted_fields, not_counted)

// The record as it travels: the struct's keys and its kind.
template <class R>
nlohmann::json to_record(const R& r) {
    nlohmann::json j = r;
    j["kind"] = R::kind;
    return j;
}

// The record's kind ("" when it has none).
std::string kind_of(const nlohmann::json& record);

// A record of kind R, or an error saying which key has the wrong type (a record of another
// kind is an error too).
template <class R>
base::Result<R> from_record(const nlohmann::json& record) {
    if (kind_of(record) != R::kind) return base::Error{EINVAL, "not a " + std::string(R::kind) + " record"};
    try {
        return record.get<R>();
    } catch (const nlohmann::json::exception& e) {
        return base::Error{EPROTO, std::string("status record ") + R::kind + ": " + e.what()};
    }
}

}  // namespace protocol::status
