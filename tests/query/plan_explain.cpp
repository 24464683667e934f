#include "plan_explain.hpp"

#include <chrono>

#include <catch2/catch.hpp>

#include "eventd/query_language/parser.hpp"
#include "eventd/query/planner.hpp"
#include "store/shard_snapshot.hpp"

namespace eventd::query_it {

std::string explain_query(const std::filesystem::path& shard_file, const std::string& text) {
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    auto parsed = query::parse(text, std::chrono::duration_cast<std::chrono::nanoseconds>(now).count());
    REQUIRE(parsed.ok());
    auto plan = query::plan_query(*parsed, false);
    REQUIRE(plan.ok());
    const std::string name = shard_file.filename().string();
    auto snapshot = store::ShardSnapshot::open(store::ShardFile{shard_file, name, 0}, {});
    REQUIRE(snapshot.ok());
    REQUIRE(snapshot->begin().ok());
    auto steps = snapshot->explain(plan->read);
    REQUIRE(steps.ok());
    std::string all;
    for (const std::string& step : *steps) all += step + "\n";
    return all;
}

}  // namespace eventd::query_it
