#include "seal/checkpoint.hpp"

#include <sodium.h>

#include <cerrno>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/hex.hpp"
#include "seal/signed_bytes.hpp"
#include "store/shard_db.hpp"

namespace eventd::seal {
namespace {

using nlohmann::json;
constexpr std::string_view kDomain = "eventd-checkpoint-v1";

template <class Bytes>
void put(std::vector<uint8_t>& out, const Bytes& bytes) {
    out.insert(out.end(), bytes.begin(), bytes.end());
}

template <class T>
bool unsigned_field(const json& j, const char* key, T& out) {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_number_unsigned()) return false;
    out = it->get<T>();
    return true;
}

template <size_t N>
bool hex_field(const json& j, const char* key, std::array<uint8_t, N>& out) {
    const auto it = j.find(key);
    return it != j.end() && it->is_string() && base::hex_bytes(it->get_ref<const std::string&>(), out);
}

}  // namespace

std::vector<uint8_t> signed_message(const Checkpoint& c) {
    std::vector<uint8_t> out(kDomain.begin(), kDomain.end());
    put_u32(out, c.shard);
    put(out, c.file_id);
    put_u64(out, uint64_t(c.last_row));
    put(out, c.head);
    put_u64(out, c.time_ns);
    put(out, c.previous);
    put_u64(out, c.signed_by.epoch);
    put_u32(out, c.interval_s);
    out.push_back(c.final ? 1 : 0);
    return out;
}

store::ChainHead checkpoint_hash(const Checkpoint& c) {
    std::vector<uint8_t> bytes = signed_message(c);
    put(bytes, c.signed_by.signature);
    store::ChainHead out;
    crypto_generichash_blake2b(out.data(), out.size(), bytes.data(), bytes.size(), nullptr, 0);
    return out;
}

store::EventRow checkpoint_row(const kmes::Guid& boot_id, const Checkpoint& c) {
    const json payload = {
        {"shard", c.shard},
        {"file_id", base::hex_text(c.file_id)},
        {"last_row", uint64_t(c.last_row)},
        {"head", base::hex_text(c.head)},
        {"time", c.time_ns},
        {"previous", base::hex_text(c.previous)},
        {"interval_s", c.interval_s},
        {"final", c.final},
        {"epoch", c.signed_by.epoch},
        {"epoch_start", c.schedule.start_s},
        {"epoch_seconds", c.schedule.epoch_seconds},
        {"epoch_key", base::hex_text(c.signed_by.epoch_key)},
        {"epoch_certificate", base::hex_text(c.signed_by.certificate)},
        {"signature", base::hex_text(c.signed_by.signature)},
    };
    store::EventRow row;
    row.boot_id = boot_id;
    row.timestamp = c.time_ns;
    row.event_type = kCheckpointType;
    row.payload = json::to_msgpack(payload);
    return row;
}

std::optional<Checkpoint> parse_checkpoint(std::span<const uint8_t> payload) {
    const json j = json::from_msgpack(payload.begin(), payload.end(), /*strict=*/true, /*allow_exceptions=*/false);
    if (!j.is_object()) return std::nullopt;
    Checkpoint c;
    uint64_t last_row = 0;
    const auto final = j.find("final");
    const bool ok = unsigned_field(j, "shard", c.shard) && hex_field(j, "file_id", c.file_id) &&
                    unsigned_field(j, "last_row", last_row) && hex_field(j, "head", c.head) &&
                    unsigned_field(j, "time", c.time_ns) && hex_field(j, "previous", c.previous) &&
                    unsigned_field(j, "interval_s", c.interval_s) && final != j.end() && final->is_boolean() &&
                    unsigned_field(j, "epoch", c.signed_by.epoch) &&
                    unsigned_field(j, "epoch_start", c.schedule.start_s) &&
                    unsigned_field(j, "epoch_seconds", c.schedule.epoch_seconds) &&
                    hex_field(j, "epoch_key", c.signed_by.epoch_key) &&
                    hex_field(j, "epoch_certificate", c.signed_by.certificate) &&
                    hex_field(j, "signature", c.signed_by.signature) && last_row <= uint64_t(INT64_MAX) &&
                    c.schedule.epoch_seconds > 0;
    if (!ok) return std::nullopt;
    c.last_row = int64_t(last_row);
    c.final = final->get<bool>();
    return c;
}

SignatureCheck check_signature(const Checkpoint& c, const PublicKey& verification_key) {
    const auto cert = certificate_message(c.schedule, c.signed_by.epoch, c.signed_by.epoch_key);
    if (crypto_sign_verify_detached(c.signed_by.certificate.data(), cert.data(), cert.size(),
                                    verification_key.data()) != 0) {
        return SignatureCheck::bad_certificate;
    }
    const auto message = signed_message(c);
    if (crypto_sign_verify_detached(c.signed_by.signature.data(), message.data(), message.size(),
                                    c.signed_by.epoch_key.data()) != 0) {
        return SignatureCheck::bad_signature;
    }
    return SignatureCheck::valid;
}

base::Status seal_shard(store::ShardDb& db, Sealer& sealer, const kmes::Guid& boot_id, uint64_t time_ns,
                        uint32_t interval_s, bool final) {
    Checkpoint c;
    c.shard = db.index();
    c.file_id = db.file_id();
    c.last_row = db.last_id();
    // The head before the checkpoint's own row: the segment so far closes here.
    auto head = db.close_segment();
    if (!head) return head.error();
    c.head = *head;
    c.time_ns = time_ns;
    if (db.last_checkpoint() && !base::hex_bytes(*db.last_checkpoint(), c.previous)) {
        return base::Error{EPROTO, db.path().string() + ": metadata last_checkpoint is malformed"};
    }
    c.interval_s = interval_s;
    c.final = final;
    c.schedule = sealer.schedule();
    auto signature = sealer.sign(time_ns, [&c](uint64_t epoch) {
        c.signed_by.epoch = epoch;
        return signed_message(c);
    });
    if (!signature) return signature.error();
    c.signed_by = *signature;
    if (auto s = db.insert(checkpoint_row(boot_id, c)); !s) return s;
    return db.set_last_checkpoint(base::hex_text(checkpoint_hash(c)));
}

}  // namespace eventd::seal
