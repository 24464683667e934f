// Every kind of msgpack value a record can hold, in every encoding width, with the edge cases
// of each (the list both writers are checked on against the tree reference).
#pragma once

#include <string>
#include <vector>

#include "msgpack_bytes.hpp"

namespace eventctl::test {

struct ValueCase {
    std::string name;
    Bytes value;  // one msgpack value
};

const std::vector<ValueCase>& value_cases();

// Keys: bare and quoted in pretty, escaped in JSON.
const std::vector<std::string>& key_cases();

// Record {key: value}.
Bytes record_with(std::string_view key, const Bytes& value);

}  // namespace eventctl::test
