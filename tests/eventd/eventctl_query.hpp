// eventctl against a Pipeline's eventd, for the tests that read its STATUS or ask it to index:
// the records of `eventctl --format jsonl QUERY`, and one STATUS record kind.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipeline.hpp"

namespace eventd::it {

// The records printed; REQUIREs exit status 0 unless `exit_code` is given to receive it.
std::vector<nlohmann::json> eventctl(Pipeline& p, const std::string& query, int* exit_code = nullptr);

// Every STATUS record of kind `kind` ("ring", "shard", "shard_indexes", …).
std::vector<nlohmann::json> status_records(Pipeline& p, const std::string& kind);

}  // namespace eventd::it
