#include "forward/record_id.hpp"

#include <cerrno>

#include "base/fnv1a.hpp"
#include "msgpack/reader.hpp"

namespace eventd::forward {

base::Result<RecordKeys> record_keys(std::span<const uint8_t> record) {
    msgpack::Reader in(record, msgpack::kRecordMaxDepth, msgpack::MapKeys::any);
    auto pairs = in.map_header();
    if (!pairs) return base::Error{EINVAL, "a record is not a msgpack map"};
    RecordKeys keys;
    bool have_type = false, have_boot = false, have_time = false;
    for (uint32_t i = 0; i < *pairs; ++i) {
        if (!in.next_is_string()) {  // a payload key of another kind: skip key and value
            if (auto st = in.skip(1); !st) return st.error();
            if (auto st = in.skip(1); !st) return st.error();
            continue;
        }
        auto key = in.string();
        if (!key) return key.error();
        const std::string_view k = *key;
        if (k != "event_type" && k != "boot_id" && k != "cpu_id" && k != "sequence" && k != "timestamp") {
            if (auto st = in.skip(1); !st) return st.error();
            continue;
        }
        auto item = in.next();
        if (!item) return item.error();
        if (item->kind == msgpack::Kind::map || item->kind == msgpack::Kind::array)
            return base::Error{EINVAL, "a record's " + std::string(k) + " is not a scalar"};
        if (k == "event_type" && item->kind == msgpack::Kind::string) {
            keys.event_type = std::string(item->bytes);
            have_type = true;
        } else if (k == "boot_id" && item->kind == msgpack::Kind::string) {
            keys.boot_id = std::string(item->bytes);
            have_boot = true;
        } else if (k == "cpu_id" && item->kind == msgpack::Kind::int_unsigned) {
            keys.cpu_id = item->unsigned_value;
        } else if (k == "sequence" && item->kind == msgpack::Kind::int_unsigned) {
            keys.sequence = item->unsigned_value;
        } else if (k == "timestamp" && item->kind == msgpack::Kind::int_unsigned) {
            keys.timestamp = static_cast<int64_t>(item->unsigned_value);
            have_time = true;
        } else if (k == "timestamp" && item->kind == msgpack::Kind::int_signed) {
            keys.timestamp = item->signed_value;
            have_time = true;
        }
    }
    if (!have_type || !have_boot || !have_time)
        return base::Error{EINVAL,
                           "a record lacks event_type, boot_id or timestamp: the forwarder's Query must not SELECT "
                           "them away"};
    return keys;
}

std::string message_id(const RecordKeys& keys, std::span<const uint8_t> record) {
    if (keys.cpu_id && keys.sequence)
        return keys.boot_id + ":" + std::to_string(*keys.cpu_id) + ":" + std::to_string(*keys.sequence);
    return "s:" + keys.boot_id + ":" + std::to_string(keys.timestamp) + ":" +
           stable_hash(std::string_view(reinterpret_cast<const char*>(record.data()), record.size()));
}

std::string stable_hash(std::string_view bytes) { return hex64(base::fnv1a64(base::kFnv1aOffsetBasis, bytes)); }

std::string hex64(uint64_t h) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string hex(16, '0');
    for (int i = 0; i < 16; ++i) hex[i] = kHex[(h >> (60 - 4 * i)) & 15];
    return hex;
}

}  // namespace eventd::forward
