// Header field names of the event table (PSD-008 §3.1.1, §13.1).
#include "eventd/query/ast.hpp"

#include <string_view>

namespace eventd::query {

namespace {

struct HeaderName {
    HeaderField field;
    std::string_view name;
};

// §13.1 "Event header field names", in the order the records show them.
constexpr HeaderName kHeaderNames[] = {
    {HeaderField::boot_id, "boot_id"},
    {HeaderField::timestamp, "timestamp"},
    {HeaderField::cpu_id, "cpu_id"},
    {HeaderField::sequence, "sequence"},
    {HeaderField::origin_class, "origin_class"},
    {HeaderField::event_type, "event_type"},
    {HeaderField::effective_token_guid, "effective_token_guid"},
    {HeaderField::true_token_guid, "true_token_guid"},
    {HeaderField::process_guid, "process_guid"},
};
static_assert(std::size(kHeaderNames) == kHeaderFieldCount);

}  // namespace

const char* header_name(HeaderField field) {
    for (const auto& h : kHeaderNames) {
        if (h.field == field) return h.name.data();
    }
    return "";  // unreachable: every enumerator is in the table
}

std::optional<HeaderField> header_field(std::string_view name) {
    for (const auto& h : kHeaderNames) {
        if (h.name == name) return h.field;
    }
    return std::nullopt;
}

bool is_guid_column(HeaderField field) {
    switch (field) {
        case HeaderField::boot_id:
        case HeaderField::effective_token_guid:
        case HeaderField::true_token_guid:
        case HeaderField::process_guid:
            return true;
        default:
            return false;
    }
}

const char* operator_text(CompareOp op) {
    switch (op) {
        case CompareOp::eq: return "==";
        case CompareOp::ne: return "!=";
        case CompareOp::gt: return ">";
        case CompareOp::ge: return ">=";
        case CompareOp::lt: return "<";
        case CompareOp::le: return "<=";
        case CompareOp::starts_with: return "STARTS_WITH";
        case CompareOp::ends_with: return "ENDS_WITH";
        case CompareOp::contains: return "CONTAINS";
        case CompareOp::in: return "IN";
        case CompareOp::not_in: return "NOT_IN";
        case CompareOp::is_null: return "IS NULL";
        case CompareOp::is_not_null: return "IS NOT NULL";
    }
    return "?";
}

}  // namespace eventd::query
