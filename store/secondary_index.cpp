#include "secondary_index.hpp"

namespace eventd::store {

bool is_index_candidate(EventColumn column) {
    switch (column) {
        case EventColumn::event_type:
        case EventColumn::origin_class:
        case EventColumn::cpu_id:
        case EventColumn::effective_token_guid:
        case EventColumn::true_token_guid:
        case EventColumn::process_guid:
        case EventColumn::boot_id:
            return true;
        default:
            return false;
    }
}

bool is_valid_payload_path(std::string_view path) {
    if (path.empty() || path.front() == '.' || path.back() == '.') return false;
    char previous = '.';
    for (const char c : path) {
        const bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
        if (!word && !(c == '.' && previous != '.')) return false;
        previous = c;
    }
    return true;
}

std::string index_name(const SecondaryIndex& index) {
    std::string name(kIndexPrefix);
    if (!index.is_expression) return name + index.field_path;
    name += "payload_";
    for (const char c : index.field_path) name += c == '.' ? '_' : c;
    return name;
}

std::optional<std::string> create_index_sql(const SecondaryIndex& index) {
    std::string target;
    if (index.is_expression) {
        if (!is_valid_payload_path(index.field_path)) return std::nullopt;
        target = payload_field_sql("$." + index.field_path) + " COLLATE NOCASE";
    } else {
        const auto column = column_named(index.field_path);
        if (!column || !is_index_candidate(*column)) return std::nullopt;
        target = index.field_path;
        if (*column == EventColumn::event_type) target += " COLLATE NOCASE";
    }
    // timestamp second: the default order of a plain query is timestamp DESC, so "WHERE f == x
    // TAKE 100" walks the index backwards and stops after 100 rows instead of fetching and
    // sorting every match (PERFORMANCE.md, adaptive indexes).
    return "CREATE INDEX IF NOT EXISTS " + index_name(index) + " ON events(" + target + ", timestamp)";
}

std::string drop_index_sql(std::string_view name) { return "DROP INDEX IF EXISTS " + std::string(name); }

std::string payload_field_sql(std::string_view dollar_path) {
    // The path is an identifier path already (the lexer's rule); quote it anyway.
    std::string sql = "msgpack_extract(payload, '";
    for (const char c : dollar_path) {
        if (c == '\'') sql += '\'';
        sql += c;
    }
    return sql + "')";
}

}  // namespace eventd::store
