// Where the query text comes from: the positional argument, `--file F`, or standard input
// (`-` as the argument or as F). Every failure here is a usage error (exit 2).
#pragma once

#include <optional>
#include <string>

#include "base/result.hpp"

namespace eventctl {

// Exactly one of `argument` and `file` is set (main checks). "-" means standard input.
// The text must be valid UTF-8; a leading UTF-8 byte-order mark in a file is dropped.
base::Result<std::string> load_query(const std::optional<std::string>& argument,
                                     const std::optional<std::string>& file);

}  // namespace eventctl
