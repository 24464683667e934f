// A source that may hand the same record to the shard writers more than once: at-least-once
// delivery, as JetStream delivers again what was not acknowledged (eventd's collector mode).
// Exactly once in the store then takes two steps only such a source can supply, and the
// writer calls them without knowing which source it is (docs/ARCHITECTURE.md "Ingest"):
// - the duplicate check, inside the writer's open transaction — so the rows of the batch
//   itself count — for every item that carries the source's receipt (HandoffItem::Receipt);
// - the settlement: which receipts a batch committed or rolled back, told once the shard's
//   lock is released, so the source may then acknowledge or ask for the records again.
#pragma once

#include <cstdint>
#include <vector>

#include "base/result.hpp"
#include "eventd/ingest/handoff.hpp"
#include "store/shard_db.hpp"

namespace eventd {

class RedeliveringSource {
public:
    virtual ~RedeliveringSource() = default;

    // On the writer thread, in its open transaction on `db` (the shard's lock held): true when
    // `item` is stored already and must not be stored again. Must not block on anything but
    // `db`; an error fails the batch.
    virtual base::Result<bool> stored_already(store::ShardDb& db, const HandoffItem& item) const = 0;

    // The batch holding these receipt ids committed (true) or was rolled back (false). On the
    // writer thread, no lock of the writer held; must not block (the source queues the
    // outcome for its own thread).
    virtual void settled(const std::vector<uint64_t>& receipt_ids, bool committed) = 0;
};

}  // namespace eventd
