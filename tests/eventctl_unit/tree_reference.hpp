// The reference the tree-less writers must match byte for byte: eventctl's output as it was
// when each record was decoded into an nlohmann::ordered_json tree and that tree was dumped.
#pragma once

#include <string>

#include "msgpack_bytes.hpp"

namespace eventctl::test {

// from_msgpack, bin/ext/non-finite floats tagged, dump(-1, ' ', false, replace).
std::string reference_json(const Bytes& record);

// from_msgpack, then key=value pairs as pretty_format.cpp wrote them from the tree.
std::string reference_pretty(const Bytes& record);

}  // namespace eventctl::test
