// SQLite's plan for the planner's own SQL of a query text on one shard file (read-only, as a
// query reads it): one EXPLAIN QUERY PLAN detail per line. Shows whether an index is used.
#pragma once

#include <filesystem>
#include <string>

namespace eventd::query_it {

std::string explain_query(const std::filesystem::path& shard_file, const std::string& text);

}  // namespace eventd::query_it
