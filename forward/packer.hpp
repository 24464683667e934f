// eventd-forward's packing (issue 27; docs/FORWARD.md "Packed messages"): consecutive records
// of one event type and boot go into one JetStream message, because nats-server's cost is per
// message (docs/PERFORMANCE.md §12: 16–18 µs of its CPU each) and a record is ~200 bytes.
//
//   add(record) ─► the open message of its event type (one per type, at most kMaxOpenMessages;
//                  a record of another boot closes the open one first)
//   a message is handed to the sink when it reaches MaxRecordsPerMessage records, when the next
//   record would take it past MaxMessageBytes, or MaxMessageDelayMs after its first record
//   (flush_due, which the reader calls when its wait for the next frame times out)
//
//   body         MaxRecordsPerMessage 1: the record itself (a msgpack map), as before packing;
//                otherwise a msgpack array of records, each exactly such a map
//   Nats-Msg-Id  one record: record_id.hpp's id of it; several: "<first id>~<last id>/<n>:<h>",
//                h = FNV-1a 64 of the records' ids — the same for the same records, so a resend
//                cut the same way is dropped by JetStream; a resend cut differently is stored
//                again and made harmless by the collector's per-record check
//
// A frame's cursor (cursor()) covers every record added before it. It reaches the sink as a
// checkpoint only once every message open at that moment has been handed over, so the
// AckWindow (which treats a checkpoint as covering every message reserved so far) never persists
// a cursor past a record that was not yet published.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "forward/ack_window.hpp"
#include "forward/record_id.hpp"

namespace eventd::forward {

struct PackLimits {
    uint32_t max_records = 1;
    uint32_t max_bytes = 1u << 20;
    std::chrono::milliseconds max_delay{0};
};

// One message to publish.
struct PackedMessage {
    std::string event_type;  // of every record in it: the subject's last tokens
    std::string boot_id;     // of every record in it: the Eventd-Boot header
    std::string msg_id;      // Nats-Msg-Id
    std::vector<uint8_t> body;
    uint32_t records = 0;
};

// Where packed messages and ready checkpoints go, in the order they become ready.
class PackerSink {
public:
    virtual ~PackerSink() = default;
    virtual base::Status publish(const PackedMessage& message) = 0;
    virtual void checkpoint(const PersistPoint& point) = 0;
};

class Packer {
public:
    using Clock = std::chrono::steady_clock;
    static constexpr size_t kMaxOpenMessages = 64;  // event types packed at once; the oldest goes first

    Packer(PackLimits limits, PackerSink& sink) : limits_(limits), sink_(sink) {}

    // A sink error is returned as it came (the session ends).
    base::Status add(const RecordKeys& keys, std::span<const uint8_t> record, Clock::time_point now);
    // The cursor of the frame whose records were all added.
    void cursor(const std::string& cursor, int64_t newest_event_ns);
    // Hands over every message opened MaxMessageDelayMs or longer before `now`.
    base::Status flush_due(Clock::time_point now);
    base::Status flush_all();
    // When the oldest open message is due; max() when none is open.
    Clock::time_point next_due() const;

private:
    struct Open {
        uint64_t number = 0;  // in opening order
        Clock::time_point opened;
        PackedMessage message;  // its body: room for the array header, then the records
        std::string first_id, last_id;
        uint64_t ids_hash = 0;
    };
    base::Status hand_over(size_t index);  // closes open_[index]
    void release_checkpoints();

    PackLimits limits_;
    PackerSink& sink_;
    std::vector<Open> open_;  // few: a linear search by type is the cheapest
    uint64_t next_number_ = 1;
    // (the newest message number open when the cursor came, the cursor)
    std::deque<std::pair<uint64_t, PersistPoint>> waiting_;
};

}  // namespace eventd::forward
