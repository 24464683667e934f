// One query through eventd's socket, its records collected whole: for the commands that read a
// result to judge it rather than print it (verify through eventd, a collector's checkpoints,
// `rules list`'s STATUS).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.hpp"

namespace eventctl {

// The records of `query`, each a msgpack map. Errors: the connection, eventd's error text, or
// EINTR when Ctrl-C came (base/interrupt.hpp's handlers installed by the caller).
base::Result<std::vector<std::vector<uint8_t>>> fetch_records(const std::string& socket, const std::string& query);

}  // namespace eventctl
