// eventctl against a Pipeline's eventd, for the tests that read its STATUS or ask it to index:
// the records of `eventctl --format jsonl QUERY`, and one STATUS record kind.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <catch2/catch.hpp>

#include "pipeline.hpp"
#include "protocol/status.hpp"

namespace eventd::it {

// The records printed; REQUIREs exit status 0 unless `exit_code` is given to receive it.
std::vector<nlohmann::json> eventctl(Pipeline& p, const std::string& query, int* exit_code = nullptr);

// Every STATUS record of kind R (protocol/status.hpp: status_of<protocol::status::Ring>(p)),
// read through the schema (REQUIREs that each reads as R).
template <class R>
std::vector<R> status_of(Pipeline& p) {
    std::vector<R> out;
    for (const nlohmann::json& r : eventctl(p, "STATUS")) {
        if (protocol::status::kind_of(r) != R::kind) continue;
        auto typed = protocol::status::from_record<R>(r);
        INFO(r.dump());
        REQUIRE(typed.ok());
        out.push_back(std::move(*typed));
    }
    return out;
}

}  // namespace eventd::it
