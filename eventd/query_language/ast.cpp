// Header field names (PSD-008 §13.1) and operator spellings of the query AST.
#include "eventd/query_language/ast.hpp"

#include <string_view>

namespace eventd::query {

std::optional<HeaderField> header_field(std::string_view name) {
    const auto column = store::column_named(name);
    if (!column || *column == store::EventColumn::id || *column == store::EventColumn::payload) return std::nullopt;
    return column;
}

const char* operator_text(CompareOp op) {
    switch (op) {
        case CompareOp::eq:
            return "==";
        case CompareOp::ne:
            return "!=";
        case CompareOp::gt:
            return ">";
        case CompareOp::ge:
            return ">=";
        case CompareOp::lt:
            return "<";
        case CompareOp::le:
            return "<=";
        case CompareOp::starts_with:
            return "STARTS_WITH";
        case CompareOp::ends_with:
            return "ENDS_WITH";
        case CompareOp::contains:
            return "CONTAINS";
        case CompareOp::in:
            return "IN";
        case CompareOp::not_in:
            return "NOT_IN";
        case CompareOp::has:
            return "HAS";
        case CompareOp::is_null:
            return "IS NULL";
        case CompareOp::is_not_null:
            return "IS NOT NULL";
    }
    return "?";
}

}  // namespace eventd::query
