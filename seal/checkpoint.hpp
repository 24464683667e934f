// A checkpoint (issue 28; docs/STORE.md "Checkpoints"): a `synthetic.checkpoint` row that pins
// its shard's chain head with a signature of the current epoch's key (sealing_key.hpp). It is
// chained like any row, so the next checkpoint covers it too, and it names the previous one.
//
//   signed message = "eventd-checkpoint-v1" ‖ u32be(shard) ‖ file_id[16] ‖ u64be(last_row) ‖
//                    head[32] ‖ u64be(time_ns) ‖ previous[32] ‖ u64be(epoch) ‖
//                    u32be(interval_s) ‖ u8(final)
//   hash           = BLAKE2b-256(signed message ‖ signature)  -- the next one's `previous`
//
// The payload (a msgpack map) carries every field of the message, the epoch's schedule, public
// key and certificate, and the signature: a verifier needs the shard and the verification key.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "seal/sealing_key.hpp"
#include "store/event_row.hpp"
#include "store/row_chain.hpp"
#include "store/store_position.hpp"

namespace eventd::store {
class ShardDb;
}

namespace eventd::seal {

inline constexpr const char* kCheckpointType = "synthetic.checkpoint";

struct Checkpoint {
    uint32_t shard = 0;
    store::FileId file_id{};
    int64_t last_row = 0;    // the row before the checkpoint's own
    store::ChainHead head{};  // the chain's head after last_row
    uint64_t time_ns = 0;
    store::ChainHead previous{};  // hash() of the shard's previous checkpoint; zeros for the first
    uint32_t interval_s = 0;      // CheckpointIntervalSeconds when it was written
    bool final = false;           // written at shutdown: no checkpoint is due until the next start
    EpochSchedule schedule;
    EpochSignature signed_by;
};

std::vector<uint8_t> signed_message(const Checkpoint& c);
store::ChainHead checkpoint_hash(const Checkpoint& c);

store::EventRow checkpoint_row(const kmes::Guid& boot_id, const Checkpoint& c);
// nullopt when the payload is not a checkpoint's (then the verifier names the row).
std::optional<Checkpoint> parse_checkpoint(std::span<const uint8_t> payload);

enum class SignatureCheck { valid, bad_certificate, bad_signature };
SignatureCheck check_signature(const Checkpoint& c, const PublicKey& verification_key);

// Seal `db`'s open transaction: a checkpoint over every row inserted so far (the transaction's
// included) as its last row, signed by `sealer`, and recorded as the shard's last checkpoint.
base::Status seal_shard(store::ShardDb& db, Sealer& sealer, const kmes::Guid& boot_id, uint64_t time_ns,
                        uint32_t interval_s, bool final);

}  // namespace eventd::seal
