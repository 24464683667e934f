#include "eventd/query_language/index_candidates.hpp"

#include "eventd/query_language/ast.hpp"

namespace eventd::query {

std::optional<std::string> candidate_problem(std::string_view field) {
    const std::string name(field);
    if (field.empty()) return std::string("INDEX needs a field name");
    if (field == "timestamp") return std::string("timestamp is always indexed (idx_events_timestamp); nothing to do");
    if (field == "sequence")
        return std::string(
            "sequence cannot be indexed; candidates are event_type, origin_class, cpu_id, "
            "effective_token_guid, true_token_guid, process_guid, boot_id and payload paths");
    if (field == "payload")
        return std::string("the raw payload is never indexed; name a payload path such as user or source.name");
    return std::nullopt;  // every other header column of §3.3.6, or a payload path
}

bool is_expression_field(std::string_view field) { return !query::is_header_name(field); }

}  // namespace eventd::query
