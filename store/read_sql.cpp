#include "read_sql.hpp"

#include <sqlite3.h>

#include <cassert>
#include <cctype>
#include <optional>

#include "secondary_index.hpp"

namespace eventd::store {
namespace {

// SQL text and its parameters, built left to right so the `?` order matches.
struct Builder {
    std::string sql;
    std::vector<SqlParam> params;

    Builder& operator<<(std::string_view text) {
        sql += text;
        return *this;
    }
    void param(const SqlParam& p) { params.push_back(p); }

    // A column from the fixed table, or msgpack_extract with the path written as a literal:
    // an expression index is used only when the query has the very same expression (§3.3.6),
    // and a bound path never matches one. Every value stays a bound parameter.
    void field(const ReadField& f) {
        if (f.column) {
            sql += name_of(*f.column);
            return;
        }
        sql += payload_field_sql(f.payload_path);
    }
};

// The collation of a comparison: NOCASE for text compared ignoring case, and for every
// payload field (it changes nothing for numbers, and it is the collation of the payload
// indexes, secondary_index.hpp — without it SQLite would not use them).
const char* collation(const Predicate& p) { return p.nocase || p.field.is_payload() ? " COLLATE NOCASE" : ""; }

const char* comparison_sql(ReadOp op) {
    switch (op) {
        case ReadOp::eq:
            return " = ?";
        case ReadOp::ne:
            return " != ?";
        case ReadOp::gt:
            return " > ?";
        case ReadOp::ge:
            return " >= ?";
        case ReadOp::lt:
            return " < ?";
        default:
            return " <= ?";
    }
}

const std::string& text_of(const Predicate& p) {
    assert(p.values.size() == 1 && std::holds_alternative<std::string>(p.values.front()));
    return std::get<std::string>(p.values.front());
}

void emit_ordering(const Predicate& p, Builder& b) {
    const bool greater = p.op == ReadOp::gt || p.op == ReadOp::ge;
    if (p.field.is_payload() && greater) {
        // Numbers sort below every text and blob value (SQLite's type order), so `x < ''`
        // keeps only numeric values; `<`/`<=` need no guard for the same reason.
        b << "(";
        b.field(p.field);
        b << comparison_sql(p.op) << collation(p);
        b.param(p.values.front());
        b << " AND ";
        b.field(p.field);
        b << " < ''" << collation(p) << ")";
        return;
    }
    b.field(p.field);
    b << comparison_sql(p.op) << collation(p);
    b.param(p.values.front());
}

// The first string after every string that starts with `prefix` ignoring ASCII case, in
// NOCASE order; nullopt when there is none to write (an empty prefix, a last byte of 0xff).
// Bounds may be loose (an increment that lands on an upper-case letter folds higher): the
// LIKE beside them decides; they only let SQLite search an index instead of scanning.
std::string ascii_lower(std::string text) {
    for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return text;
}

std::optional<std::string> nocase_successor(std::string prefix) {
    prefix = ascii_lower(std::move(prefix));
    if (prefix.empty() || static_cast<unsigned char>(prefix.back()) == 0xff) return std::nullopt;
    prefix.back() = static_cast<char>(static_cast<unsigned char>(prefix.back()) + 1);
    return prefix;
}

void emit_text_match(const Predicate& p, Builder& b) {
    std::string pattern = like_escape(text_of(p));
    if (p.op == ReadOp::starts_with) pattern = pattern + "%";
    if (p.op == ReadOp::ends_with) pattern = "%" + pattern;
    if (p.op == ReadOp::contains) pattern = "%" + pattern + "%";
    if (p.field.is_payload()) {
        // LIKE would turn numbers into text; only text values match a string operator.
        b << "(typeof(";
        b.field(p.field);
        b << ") = 'text' AND ";
        // A prefix is a range an index can search (LIKE on an expression never uses one).
        const std::string& prefix = text_of(p);
        const auto after = nocase_successor(prefix);
        if (p.op == ReadOp::starts_with && after) {
            b.field(p.field);
            b << " >= ? COLLATE NOCASE AND ";
            b.param(SqlParam{ascii_lower(prefix)});
            b.field(p.field);
            b << " < ? COLLATE NOCASE AND ";
            b.param(SqlParam{*after});
        }
    }
    b.field(p.field);
    b << " LIKE ? ESCAPE '\\'";
    b.param(std::move(pattern));
    if (p.field.is_payload()) b << ")";
}

// Type pattern (§8.2.2): case-insensitive; `*` = any run of characters, the only wildcard.
void emit_glob(const Predicate& p, Builder& b) {
    const std::string& pattern = text_of(p);
    if (pattern.find('*') == std::string::npos) {
        b.field(p.field);
        b << " = ? COLLATE NOCASE";
        b.param(pattern);
        return;
    }
    std::string like;
    size_t start = 0;
    for (size_t star; (star = pattern.find('*', start)) != std::string::npos; start = star + 1) {
        like += like_escape(std::string_view(pattern).substr(start, star - start));
        like += '%';
    }
    like += like_escape(std::string_view(pattern).substr(start));
    b.field(p.field);
    b << " LIKE ? ESCAPE '\\'";
    b.param(std::move(like));
}

void emit_equality(const Predicate& p, Builder& b) {
    if (p.op == ReadOp::eq || p.op == ReadOp::ne) {
        b.field(p.field);
        b << comparison_sql(p.op) << collation(p);
        b.param(p.values.front());
        return;
    }
    // x [COLLATE NOCASE] [NOT] IN (?, …): the left operand's collation applies to the list.
    b.field(p.field);
    b << collation(p);
    b << (p.op == ReadOp::in ? " IN (" : " NOT IN (");
    for (size_t i = 0; i < p.values.size(); ++i) {
        b << (i ? ", ?" : "?");
        b.param(p.values[i]);
    }
    b << ")";
}

void emit_predicate(const Predicate& p, Builder& b) {
    if (p.kind != Predicate::Kind::compare) {
        const bool all = p.kind == Predicate::Kind::all_of;
        if (p.children.empty()) {
            b << (all ? "1" : "0");
            return;
        }
        b << "(";
        for (size_t i = 0; i < p.children.size(); ++i) {
            if (i) b << (all ? " AND " : " OR ");
            emit_predicate(p.children[i], b);
        }
        b << ")";
        return;
    }
    switch (p.op) {
        case ReadOp::is_null:
        case ReadOp::is_not_null:
            b.field(p.field);
            b << (p.op == ReadOp::is_null ? " IS NULL" : " IS NOT NULL");
            return;
        case ReadOp::gt:
        case ReadOp::ge:
        case ReadOp::lt:
        case ReadOp::le:
            emit_ordering(p, b);
            return;
        case ReadOp::starts_with:
        case ReadOp::ends_with:
        case ReadOp::contains:
            emit_text_match(p, b);
            return;
        case ReadOp::glob:
            emit_glob(p, b);
            return;
        case ReadOp::has:
            b << "msgpack_array_has(";
            b.field(p.field);
            b << ", ?)";
            b.param(p.values.front());
            return;
        case ReadOp::eq:
        case ReadOp::ne:
        case ReadOp::in:
        case ReadOp::not_in:
            emit_equality(p, b);
            return;
    }
}

// The caller's filters joined with AND; "1" when there are none.
void emit_all_of(const std::vector<Predicate>& predicates, Builder& b) {
    if (predicates.empty()) {
        b << "1";
        return;
    }
    for (size_t i = 0; i < predicates.size(); ++i) {
        if (i) b << " AND ";
        emit_predicate(predicates[i], b);  // a comparison needs no parentheses; a group brings its own
    }
}

// The WHERE clause: `prefix` (the live feed's id bounds) and the bounds first, then the
// caller's predicates. For a restricted reader those sit inside
//     CASE WHEN eventd_visible(event_type, effective_token_guid, true_token_guid) THEN (<predicates>) ELSE 0 END
// SQLite evaluates CASE lazily (lang_expr.html, "CASE expression"), so no predicate of the
// caller ever runs on a hidden row; and a CASE is one opaque term to the planner, so no index
// on a field the caller names can be searched either (its entries would include hidden rows,
// and their number would show in the query's time). Only `prefix` and `bounds` drive indexes.
void emit_where(const ReadPlan& plan, Builder& b, const char* prefix) {
    bool first = true;
    auto next = [&] {
        b << (first ? " WHERE " : " AND ");
        first = false;
    };
    if (prefix) {
        next();
        b << prefix;
    }
    for (const Predicate& p : plan.bounds) {
        next();
        emit_predicate(p, b);
    }
    if (plan.visible_only) {
        next();
        b << "CASE WHEN eventd_visible(event_type, effective_token_guid, true_token_guid) THEN (";
        emit_all_of(plan.where, b);
        b << ") ELSE 0 END";
        return;
    }
    for (const Predicate& p : plan.where) {
        next();
        emit_predicate(p, b);
    }
}

void emit_rows(const ReadPlan& plan, Builder& b) {
    b << "SELECT " << event_select_list();
    std::vector<std::string> order_terms;
    int key = 0;
    for (const ReadSortKey& k : plan.sort) {
        std::string term;
        if (k.field.column) {
            term = name_of(*k.field.column);
        } else {
            term = "k" + std::to_string(key++);
            b << ", ";
            b.field(k.field);
            b << " AS " << term;
        }
        if (k.nocase) term += " COLLATE NOCASE";
        if (k.descending) term += " DESC";
        order_terms.push_back(std::move(term));
    }
    b << " FROM events";
    emit_where(plan, b, nullptr);
    b << " ORDER BY ";
    for (const std::string& term : order_terms) b << term << ", ";
    // The documented tie-break (the coordinator completes it with the shard file name).
    b << "boot_id, cpu_id, sequence, id";
    if (plan.limit) {
        b << " LIMIT ?";
        b.params.emplace_back(std::in_place_type<int64_t>, *plan.limit);
    }
}

void emit_groups(const ReadPlan& plan, Builder& b) {
    b << "SELECT ";
    for (size_t i = 0; i < plan.group_by.size(); ++i) {
        if (i) b << ", ";
        b.field(plan.group_by[i]);
        b << " AS g" << std::to_string(i);
    }
    b << ", count(*)";
    if (plan.partial != Partial::none) {
        switch (plan.partial) {
            case Partial::sum:
                b << ", eventd_num_sum(";
                break;
            case Partial::min:
                b << ", eventd_num_min(";
                break;
            default:
                b << ", eventd_num_max(";
                break;
        }
        b.field(plan.partial_field);
        b << ")";
    }
    b << " FROM events";
    emit_where(plan, b, nullptr);
    b << " GROUP BY ";
    for (size_t i = 0; i < plan.group_by.size(); ++i) b << (i ? ", g" : "g") << std::to_string(i);
}

}  // namespace

std::string like_escape(std::string_view text) {
    std::string out;
    out.reserve(text.size() + 2);
    for (char c : text) {
        if (c == '\\' || c == '%' || c == '_') out += '\\';
        out += c;
    }
    return out;
}

int sort_key_column(const ReadPlan& plan, size_t i) {
    assert(i < plan.sort.size());
    if (plan.sort[i].field.column) return index_of(*plan.sort[i].field.column);
    int payload_keys = 0;
    for (size_t j = 0; j < i; ++j) payload_keys += plan.sort[j].field.is_payload() ? 1 : 0;
    return kEventColumnCount + payload_keys;
}

void bind_params(sqlite3_stmt* stmt, const std::vector<SqlParam>& params) {
    for (size_t i = 0; i < params.size(); ++i) {
        const int index = static_cast<int>(i) + 1;
        const SqlParam& p = params[i];
        if (const auto* n = std::get_if<int64_t>(&p)) {
            sqlite3_bind_int64(stmt, index, *n);
        } else if (const auto* d = std::get_if<double>(&p)) {
            sqlite3_bind_double(stmt, index, *d);
        } else if (const auto* s = std::get_if<std::string>(&p)) {
            sqlite3_bind_text(stmt, index, s->data(), static_cast<int>(s->size()), SQLITE_TRANSIENT);
        } else {
            const auto& blob = std::get<SqlBlob>(p).bytes;
            sqlite3_bind_blob(stmt, index, blob.data(), static_cast<int>(blob.size()), SQLITE_TRANSIENT);
        }
    }
}

SqlText read_sql(const ReadPlan& plan) {
    Builder b;
    switch (plan.shape) {
        case ReadPlan::Shape::rows:
            emit_rows(plan, b);
            break;
        case ReadPlan::Shape::live:
            b << "SELECT " << event_select_list() << " FROM events";
            b.params.emplace_back(std::in_place_type<int64_t>, 0);  // id > ?  (the watermark)
            b.params.emplace_back(std::in_place_type<int64_t>, 0);  // id <= ? (the snapshot's max(id))
            emit_where(plan, b, "id > ? AND id <= ?");
            b << " ORDER BY id LIMIT " << std::to_string(kLiveBatchRows);
            break;
        case ReadPlan::Shape::count:
            b << "SELECT count(*) FROM events";
            emit_where(plan, b, nullptr);
            break;
        case ReadPlan::Shape::groups:
            emit_groups(plan, b);
            break;
    }
    return SqlText{std::move(b.sql), std::move(b.params)};
}

}  // namespace eventd::store
