#include "payload_map.hpp"

#include <algorithm>
#include <cstring>

#include "base/fnv1a.hpp"

namespace kmes::audit {

namespace mp = eventd::msgpack;

PayloadMap::PayloadMap(size_t expected_bytes) {
    body_.reserve(expected_bytes);
    keys_.reserve(expected_bytes / 16);
}

bool PayloadMap::taken(std::string_view key, uint64_t hash) const {
    // A payload has a few dozen keys: a linear scan of their hashes beats building any map.
    for (const KeyAt& k : keys_)
        if (k.hash == hash && k.size == key.size() && std::memcmp(body_.data() + k.offset, key.data(), key.size()) == 0)
            return true;
    return std::find(reserved_.begin(), reserved_.end(), key) != reserved_.end();
}

void PayloadMap::put_key(std::string_view key, uint64_t hash) {
    mp::put_string(body_, key);
    // put_string wrote the header and then the key's bytes: they are the last key.size() bytes.
    keys_.push_back({hash, body_.size() - key.size(), key.size()});
}

bool PayloadMap::add(std::string_view key) {
    const uint64_t hash = base::fnv1a64(base::kFnv1aOffsetBasis, key);
    if (taken(key, hash)) return false;
    put_key(key, hash);
    return true;
}

void PayloadMap::add_reserved(std::string_view key) { put_key(key, base::fnv1a64(base::kFnv1aOffsetBasis, key)); }

void PayloadMap::reserve(std::initializer_list<std::string_view> keys) {
    reserved_.insert(reserved_.end(), keys.begin(), keys.end());
}

void PayloadMap::write_to(Bytes& out) const {
    out.reserve(out.size() + 5 + body_.size());
    mp::put_map_header(out, keys_.size());
    out.insert(out.end(), body_.begin(), body_.end());
}

}  // namespace kmes::audit
