// Forward-secure sealing keys (issue 28; docs/STORE.md "Sealing"). `eventctl seal --setup` makes
// them once per store; eventd signs its checkpoints (checkpoint.hpp) with them.
//
// Time is cut into epochs (EpochSchedule). Each epoch e has its own Ed25519 key pair, made from
// a seed: seed(e+1) = BLAKE2b-256("eventd seal evolve v1" ‖ seed(e)). At setup a master key pair
// certifies every epoch's public key for the schedule's horizon, then the master secret key is
// erased: the master public key is the verification key, printed for the operator to keep off
// the machine. The machine keeps only the current epoch's seed (sealing.key) and the public
// certificates (sealing.certs). Moving to a later epoch hashes the seed forward and overwrites
// the file, so whoever takes the machine in epoch E holds no key for an epoch before E: what
// was sealed before cannot be re-signed (forward security). Keys of later epochs can be
// derived by that attacker — the verifier's epoch and time checks (verify_store.hpp) are what
// make a checkpoint signed "from the future" detectable (the journald CVE-2023-31439 lesson).
//
//   DIR/sealing.key    0600, owned as DIR:  "eventd-sealing-key v1" / start / epoch_seconds /
//                                           epochs / epoch / seed (text lines, see STORE.md)
//   DIR/sealing.certs  0600 (not secret):   header line, then per epoch pk[32] ‖ cert[64]
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "base/result.hpp"

namespace eventd::seal {

using PublicKey = std::array<uint8_t, 32>;
using Signature = std::array<uint8_t, 64>;

inline constexpr const char* kKeyFile = "sealing.key";
inline constexpr const char* kCertsFile = "sealing.certs";

struct EpochSchedule {
    uint64_t start_s = 0;         // unix seconds where epoch 0 begins
    uint32_t epoch_seconds = 900;  // 15 min, as journald's sealing
    uint64_t epochs = 0;          // the horizon: epochs 0 … epochs-1 have keys

    // The epoch a time (ns since the epoch) falls in; times before start_s are in epoch 0.
    uint64_t epoch_at(uint64_t time_ns) const;
    uint64_t epoch_start_ns(uint64_t epoch) const;
};

// What an epoch certificate signs: "eventd-epoch-v1" ‖ u64be(start) ‖ u32be(epoch_seconds) ‖
// u64be(epoch) ‖ pk — so the schedule itself is signed by the master key.
std::vector<uint8_t> certificate_message(const EpochSchedule& schedule, uint64_t epoch, const PublicKey& pk);

struct SetupOptions {
    uint32_t epoch_seconds = 900;
    double years = 10;
    // Called now and then with (epochs done, epochs in all).
    std::function<void(uint64_t, uint64_t)> progress;
};

// Make the keys for the store in `dir` (which must exist). Refuses when a sealing.key is there
// already (a second setup would strand the first verification key). Returns the verification key
// as 64 hex digits.
base::Result<std::string> setup_keys(const std::filesystem::path& dir, const SetupOptions& options);

// The verification key from its text (64 hex digits, either case).
base::Result<PublicKey> parse_verification_key(const std::string& text);

// One epoch's signature on a message, with what a verifier needs besides the master key.
struct EpochSignature {
    uint64_t epoch = 0;
    PublicKey epoch_key{};
    Signature certificate{};  // the master's, over certificate_message(schedule, epoch, epoch_key)
    Signature signature{};    // the epoch key's, over the message
};

// eventd's signer: the current epoch's key, moved forward as time goes on. Thread-safe.
class Sealer {
public:
    // nullptr without error when `dir` has no sealing.key (sealing not set up).
    static base::Result<std::unique_ptr<Sealer>> load(const std::filesystem::path& dir);
    ~Sealer();

    const EpochSchedule& schedule() const { return schedule_; }
    // Sign `message` with the key of the epoch `time_ns` falls in, moving the key forward first
    // when that epoch is later than the current one (the file is rewritten durably and the older
    // seed erased before anything is signed with the new one). A time before the current epoch
    // (the clock was set back) is signed with the current key. Error past the horizon.
    // The message names its epoch, so the caller makes it for the epoch chosen here.
    base::Result<EpochSignature> sign(uint64_t time_ns,
                                      const std::function<std::vector<uint8_t>(uint64_t epoch)>& message_for);
    uint64_t current_epoch() const;

private:
    Sealer() = default;
    base::Status advance_to(uint64_t epoch);  // under mutex_

    std::filesystem::path dir_;
    EpochSchedule schedule_;
    mutable std::mutex mutex_;
    uint64_t epoch_ = 0;
    std::array<uint8_t, 32> seed_{};  // of epoch_
    // sealing.certs is read one record at a time (10 years of 15-minute epochs are 33 MB):
    // epoch_'s public key and certificate, read when the epoch changes.
    size_t certs_offset_ = 0;  // where the records begin
    PublicKey epoch_key_{};
    Signature certificate_{};
    base::Status read_certificate();  // of epoch_, checked against the seed
};

// The next epoch's seed (exposed for tests that play the attacker of a later epoch).
std::array<uint8_t, 32> evolve_seed(const std::array<uint8_t, 32>& seed);

}  // namespace eventd::seal
