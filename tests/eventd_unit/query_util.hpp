// Helpers shared by the unit tests of eventd's query side: root's access, msgpack of a JSON value.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "eventd/access/policy.hpp"

namespace eventd_unit {

// What root may read under the default policy (no policy file): everything.
inline eventd::access::CallerAccess root_access() {
    return eventd::access::CallerAccess(eventd::access::Caller{}, eventd::access::Policy::parse(nullptr).value());
}

// `j` encoded as msgpack: a request frame's body, a stored payload.
inline std::vector<uint8_t> packed(const nlohmann::json& j) { return nlohmann::json::to_msgpack(j); }

}  // namespace eventd_unit
