#include "payload_map.hpp"

#include <algorithm>
#include <cstring>

namespace kmes::audit {

namespace mp = eventd::msgpack;

bool PayloadMap::taken(std::string_view key) const {
    // A payload has a few dozen keys: a linear scan over bytes already written beats any map.
    for (const KeyAt& k : keys_)
        if (k.size == key.size() && std::memcmp(body_.data() + k.offset, key.data(), key.size()) == 0) return true;
    return std::find(reserved_.begin(), reserved_.end(), key) != reserved_.end();
}

void PayloadMap::put_key(std::string_view key) {
    mp::put_string(body_, key);
    // put_string wrote the header and then the key's bytes: they are the last key.size() bytes.
    keys_.push_back({body_.size() - key.size(), key.size()});
}

bool PayloadMap::add(std::string_view key) {
    if (taken(key)) return false;
    put_key(key);
    return true;
}

void PayloadMap::add_reserved(std::string_view key) { put_key(key); }

void PayloadMap::reserve(std::initializer_list<std::string_view> keys) {
    reserved_.insert(reserved_.end(), keys.begin(), keys.end());
}

void PayloadMap::write_to(Bytes& out) const {
    mp::put_map_header(out, keys_.size());
    out.insert(out.end(), body_.begin(), body_.end());
}

}  // namespace kmes::audit
