// Query → parameterised per-shard SQL (PSD-008 §8.6.3); see planner.hpp for the layouts.
//
// Comparison semantics (§8.1, decided for this implementation):
// - strings compare case-insensitively (ASCII, SQLite NOCASE / LIKE), payload fields included;
//   `%`, `_`, `\` and `*` in a string value are literal (LIKE … ESCAPE '\');
// - `> >= < <=` need a number or time literal; on a payload field only numeric values can
//   satisfy them (a text payload value never satisfies `> 5`);
// - GUID columns take GUID strings (braces optional, any case) compared as 16 bytes;
// - integer columns take integer, float, time and boolean literals, never strings;
// - NULL (a missing payload field) matches neither ==, != nor NOT_IN: SQL NULL semantics.
#include "eventd/query/planner.hpp"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <limits>

#include "eventd/query/record.hpp"
#include "kmes/guid.hpp"

namespace eventd::query {
namespace {

using kmes::Error;

enum class FieldKind { guid, integer, text, payload };

FieldKind kind_of(const FieldRef& f) {
    if (!f.header) return FieldKind::payload;
    if (is_guid_column(*f.header)) return FieldKind::guid;
    if (*f.header == HeaderField::event_type) return FieldKind::text;
    return FieldKind::integer;
}

// The record column of a header field (record.hpp kRecordColumns order).
int record_column(HeaderField h) {
    switch (h) {
        case HeaderField::boot_id: return 0;
        case HeaderField::timestamp: return 1;
        case HeaderField::cpu_id: return 2;
        case HeaderField::sequence: return 3;
        case HeaderField::origin_class: return 4;
        case HeaderField::event_type: return 5;
        case HeaderField::effective_token_guid: return 6;
        case HeaderField::true_token_guid: return 7;
        case HeaderField::process_guid: return 8;
    }
    return 0;
}

const char* sql_op(CompareOp op) {
    switch (op) {
        case CompareOp::gt: return " > ?";
        case CompareOp::ge: return " >= ?";
        case CompareOp::lt: return " < ?";
        case CompareOp::le: return " <= ?";
        default: return " = ?";
    }
}

const char* literal_type(const Literal& v) {
    switch (v.index()) {
        case 0: return "an integer";
        case 1: return "a float";
        case 2: return "a string";
        case 3: return "a boolean";
        default: return "a time";
    }
}

std::string literal_text(const Literal& v) {
    if (const auto* s = std::get_if<std::string>(&v)) return *s;
    if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
    if (const auto* d = std::get_if<double>(&v)) {
        char buf[40];
        std::snprintf(buf, sizeof buf, "%.17g", *d);
        return buf;
    }
    if (const auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
    return std::to_string(std::get<TimeLiteral>(v).ns);
}

// Numeric value of a literal where a number is acceptable (time → ns, bool → 1/0).
std::optional<SqlParam> numeric_param(const Literal& v) {
    if (const auto* i = std::get_if<int64_t>(&v)) return SqlParam{*i};
    if (const auto* d = std::get_if<double>(&v)) return SqlParam{*d};
    if (const auto* b = std::get_if<bool>(&v)) return SqlParam{int64_t{*b ? 1 : 0}};
    if (const auto* t = std::get_if<TimeLiteral>(&v)) return SqlParam{t->ns};
    return std::nullopt;
}

// `\`, `%`, `_` escaped for LIKE … ESCAPE '\'.
std::string like_escape(std::string_view text) {
    std::string out;
    out.reserve(text.size() + 2);
    for (char c : text) {
        if (c == '\\' || c == '%' || c == '_') out += '\\';
        out += c;
    }
    return out;
}

Error type_error(std::string message) { return Error{EINVAL, std::move(message)}; }

// SQL text and its parameters, built left to right so the `?` order matches.
struct Builder {
    std::string sql;
    std::vector<SqlParam> params;

    Builder& operator<<(std::string_view text) {
        sql += text;
        return *this;
    }
    void param(SqlParam p) { params.push_back(std::move(p)); }
    // In-place forms (GCC 12 warns spuriously about moving a temporary variant).
    void param(int64_t v) { params.emplace_back(std::in_place_type<int64_t>, v); }
    void param(std::string v) { params.emplace_back(std::in_place_type<std::string>, std::move(v)); }

    // A field as an SQL expression: a whitelisted column, or msgpack_extract with the path bound.
    void field(const FieldRef& f) {
        if (f.header) {
            sql += header_name(*f.header);
            return;
        }
        std::string path = "$";
        if (f.path.empty()) {
            path += "." + f.name;
        } else {
            for (const std::string& part : f.path) path += "." + part;
        }
        sql += "msgpack_extract(payload, ?)";
        param(std::move(path));
    }
};

kmes::Status emit_condition(const Condition& c, Builder& b);

kmes::Status emit_ordering(const Comparison& c, Builder& b) {
    const FieldKind kind = kind_of(c.field);
    const char* op = operator_text(c.op);
    if (c.values.size() != 1) return type_error(std::string("operator ") + op + " needs one value");
    const Literal& v = c.values.front();
    auto num = numeric_param(v);
    if (!num || std::holds_alternative<bool>(v)) {
        return type_error(std::string("operator ") + op + " needs a number or time, got " + literal_type(v));
    }
    if (kind == FieldKind::guid) {
        return type_error(std::string("operator ") + op + " does not apply to field " + c.field.name +
                          ", which is a GUID");
    }
    if (kind == FieldKind::text) {
        return type_error(std::string("operator ") + op + " does not apply to field " + c.field.name +
                          ", which is a string");
    }
    const bool greater = c.op == CompareOp::gt || c.op == CompareOp::ge;
    if (kind == FieldKind::payload && greater) {
        // Numbers sort below every text and blob value (SQLite's type order), so `x < ''`
        // keeps only numeric values; `<`/`<=` need no guard for the same reason.
        b << "(";
        b.field(c.field);
        b << sql_op(c.op);
        b.param(*num);
        b << " AND ";
        b.field(c.field);
        b << " < '')";
        return {};
    }
    b.field(c.field);
    b << sql_op(c.op);
    b.param(*num);
    return {};
}

kmes::Status emit_text_match(const Comparison& c, Builder& b) {
    const FieldKind kind = kind_of(c.field);
    const char* op = operator_text(c.op);
    if (c.values.size() != 1) return type_error(std::string(op) + " needs one value");
    const auto* text = std::get_if<std::string>(&c.values.front());
    if (!text) return type_error(std::string(op) + " needs a string, got " + literal_type(c.values.front()));
    if (kind == FieldKind::guid) {
        return type_error(std::string(op) + " does not apply to field " + c.field.name + ", which is a GUID");
    }
    if (kind == FieldKind::integer) {
        return type_error(std::string(op) + " does not apply to field " + c.field.name + ", which is an integer");
    }
    std::string pattern = like_escape(*text);
    if (c.op == CompareOp::starts_with) pattern = pattern + "%";
    if (c.op == CompareOp::ends_with) pattern = "%" + pattern;
    if (c.op == CompareOp::contains) pattern = "%" + pattern + "%";
    if (kind == FieldKind::payload) {
        // LIKE would turn numbers into text; only text values match a string operator.
        b << "(typeof(";
        b.field(c.field);
        b << ") = 'text' AND ";
    }
    b.field(c.field);
    b << " LIKE ? ESCAPE '\\'";
    b.param(std::move(pattern));
    if (kind == FieldKind::payload) b << ")";
    return {};
}

// The parameter for one ==/!=/IN/NOT_IN value; *is_text set when it compares as a string.
kmes::Result<SqlParam> equality_param(const FieldRef& f, const Literal& v, bool* is_text) {
    switch (kind_of(f)) {
        case FieldKind::guid: {
            const auto* text = std::get_if<std::string>(&v);
            std::optional<kmes::Guid> guid;
            if (text) guid = kmes::parse_guid(*text);
            if (!guid) return type_error("'" + literal_text(v) + "' is not a GUID (field " + f.name + ")");
            return SqlParam{SqlBlob{std::vector<uint8_t>(guid->begin(), guid->end())}};
        }
        case FieldKind::integer: {
            auto num = numeric_param(v);
            if (!num) {
                return type_error("field " + f.name + " is an integer; '" + literal_text(v) + "' is " +
                                  literal_type(v));
            }
            return *num;
        }
        case FieldKind::text:
        case FieldKind::payload:
            if (const auto* text = std::get_if<std::string>(&v)) {
                *is_text = true;
                return SqlParam{*text};
            }
            return *numeric_param(v);
    }
    return type_error("unsupported field " + f.name);
}

kmes::Status emit_equality(const Comparison& c, Builder& b) {
    if (c.values.empty()) return type_error(std::string(operator_text(c.op)) + " needs a value");
    bool any_text = false;
    std::vector<SqlParam> params;
    for (const Literal& v : c.values) {
        auto p = equality_param(c.field, v, &any_text);
        if (!p) return p.error();
        params.push_back(std::move(*p));
    }
    if (c.op == CompareOp::eq || c.op == CompareOp::ne) {
        if (params.size() != 1) return type_error(std::string("operator ") + operator_text(c.op) + " needs one value");
        b.field(c.field);
        b << (c.op == CompareOp::eq ? " = ?" : " != ?");
        if (any_text) b << " COLLATE NOCASE";
        b.param(std::move(params.front()));
        return {};
    }
    // x [COLLATE NOCASE] [NOT] IN (?, …): the left operand's collation applies to the list.
    b.field(c.field);
    if (any_text) b << " COLLATE NOCASE";
    b << (c.op == CompareOp::in ? " IN (" : " NOT IN (");
    for (size_t i = 0; i < params.size(); ++i) {
        b << (i ? ", ?" : "?");
        b.param(std::move(params[i]));
    }
    b << ")";
    return {};
}

kmes::Status emit_comparison(const Comparison& c, Builder& b) {
    switch (c.op) {
        case CompareOp::is_null:
        case CompareOp::is_not_null:
            b.field(c.field);
            b << (c.op == CompareOp::is_null ? " IS NULL" : " IS NOT NULL");
            return {};
        case CompareOp::gt:
        case CompareOp::ge:
        case CompareOp::lt:
        case CompareOp::le:
            return emit_ordering(c, b);
        case CompareOp::starts_with:
        case CompareOp::ends_with:
        case CompareOp::contains:
            return emit_text_match(c, b);
        case CompareOp::eq:
        case CompareOp::ne:
        case CompareOp::in:
        case CompareOp::not_in:
            return emit_equality(c, b);
    }
    return type_error("unsupported operator");
}

kmes::Status emit_condition(const Condition& c, Builder& b) {
    if (c.kind == Condition::Kind::compare) return emit_comparison(c.comparison, b);
    const bool all = c.kind == Condition::Kind::all_of;
    if (c.children.empty()) {
        b << (all ? "1" : "0");
        return {};
    }
    b << "(";
    for (size_t i = 0; i < c.children.size(); ++i) {
        if (i) b << (all ? " AND " : " OR ");
        if (auto st = emit_condition(c.children[i], b); !st) return st;
    }
    b << ")";
    return {};
}

// Type pattern (§8.2.2): case-insensitive; `*` = any run of characters, the only wildcard.
void emit_type_pattern(const std::string& pattern, Builder& b) {
    if (pattern.find('*') == std::string::npos) {
        b << "event_type = ? COLLATE NOCASE";
        b.param(pattern);
        return;
    }
    std::string like;
    for (char c : pattern) {
        if (c == '*') {
            like += '%';
        } else {
            if (c == '\\' || c == '%' || c == '_') like += '\\';
            like += c;
        }
    }
    b << "event_type LIKE ? ESCAPE '\\'";
    b.param(std::move(like));
}

// The WHERE clause: type pattern, SINCE/UNTIL (when `with_time`), every WHERE group, the
// visibility predicate. `prefix` conditions come first (the live feed's id bounds).
kmes::Status emit_where(const Query& q, bool restricted, bool with_time, Builder& b, const char* prefix = nullptr) {
    bool first = true;
    auto next = [&] {
        b << (first ? " WHERE " : " AND ");
        first = false;
    };
    if (prefix) {
        next();
        b << prefix;
    }
    // A pattern of only `*` matches every type: no predicate.
    const auto& pattern = q.type_pattern;
    if (pattern && (pattern->empty() || pattern->find_first_not_of('*') != std::string::npos)) {
        next();
        emit_type_pattern(*pattern, b);
    }
    if (with_time && q.since_ns) {
        next();
        b << "timestamp >= ?";
        b.param(*q.since_ns);
    }
    if (with_time && q.until_ns) {
        next();
        b << "timestamp <= ?";
        b.param(*q.until_ns);
    }
    for (const Condition& c : q.where) {
        next();
        b << "(";
        if (auto st = emit_condition(c, b); !st) return st;
        b << ")";
    }
    if (restricted) {
        next();
        b << "eventd_visible(event_type)";
    }
    return {};
}

bool text_possible(const FieldRef& f) { return kind_of(f) == FieldKind::text || kind_of(f) == FieldKind::payload; }

kmes::Result<Plan> plan_plain(const Query& q, bool restricted) {
    Plan plan;
    Builder b;
    b << "SELECT " << kRecordColumns << ", id";
    std::vector<SortKey> sort = q.sort;
    if (sort.empty()) {
        SortKey k;
        k.field.name = "timestamp";
        k.field.header = HeaderField::timestamp;
        k.descending = true;
        sort.push_back(std::move(k));
    }
    std::vector<std::string> order_terms;
    int next_column = kIdColumn + 1;
    for (const SortKey& k : sort) {
        SortColumn col;
        col.descending = k.descending;
        col.nocase = text_possible(k.field);
        std::string term;
        if (k.field.header) {
            col.column = record_column(*k.field.header);
            term = header_name(*k.field.header);
        } else {
            col.column = next_column;
            term = "k" + std::to_string(next_column - kIdColumn - 1);
            b << ", ";
            b.field(k.field);
            b << " AS " << term;
            ++next_column;
        }
        if (col.nocase) term += " COLLATE NOCASE";
        if (col.descending) term += " DESC";
        order_terms.push_back(std::move(term));
        plan.sort.push_back(col);
    }
    b << " FROM events";
    if (auto st = emit_where(q, restricted, true, b); !st) return st.error();
    b << " ORDER BY ";
    for (const std::string& term : order_terms) b << term << ", ";
    // The documented tie-break (shard file name and id complete it at the coordinator).
    b << "boot_id, cpu_id, sequence, id";
    if (q.take) {
        const uint64_t skip = q.skip.value_or(0);
        const uint64_t max = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
        if (skip <= max && *q.take <= max - skip) {
            plan.shard_limit = skip + *q.take;
            b << " LIMIT ?";
            b.param(static_cast<int64_t>(*plan.shard_limit));
        }
    }
    plan.sql = std::move(b.sql);
    plan.params = std::move(b.params);
    return plan;
}

// Output key names of an aggregate query: what an explicit SORT may name.
std::vector<std::string> output_keys(const Aggregation& a) {
    std::vector<std::string> keys;
    if (a.kind != Aggregation::Kind::count) {
        for (const FieldRef& f : a.fields) keys.push_back(f.name);
    }
    switch (a.kind) {
        case Aggregation::Kind::count:
        case Aggregation::Kind::count_by:
        case Aggregation::Kind::top_by:
            keys.push_back("count");
            break;
        case Aggregation::Kind::group: {
            static const char* const names[] = {"count", "sum", "avg", "min", "max"};
            keys.push_back(names[static_cast<int>(a.fn)]);
            break;
        }
        default:
            break;
    }
    return keys;
}

kmes::Result<Plan> plan_aggregate(const Query& q, bool restricted) {
    const Aggregation& a = q.aggregation;
    // An explicit SORT names output keys (decided semantics).
    const std::vector<std::string> keys = output_keys(a);
    for (const SortKey& k : q.sort) {
        if (std::find(keys.begin(), keys.end(), k.field.name) == keys.end()) {
            std::string list;
            for (const std::string& key : keys) list += (list.empty() ? "" : ", ") + key;
            return type_error("SORT " + k.field.name + ": this query's results only have the keys " + list);
        }
    }
    Plan plan;
    plan.aggregate = true;
    Builder b;
    if (a.kind == Aggregation::Kind::count) {
        b << "SELECT count(*) FROM events";
        if (auto st = emit_where(q, restricted, true, b); !st) return st.error();
        plan.sql = std::move(b.sql);
        plan.params = std::move(b.params);
        return plan;
    }
    if (a.fields.empty()) return type_error("the aggregation needs a field");
    b << "SELECT ";
    for (size_t i = 0; i < a.fields.size(); ++i) {
        if (i) b << ", ";
        b.field(a.fields[i]);
        b << " AS g" << std::to_string(i);
    }
    b << ", count(*)";
    if (a.kind == Aggregation::Kind::group && a.fn != AggregateFn::count) {
        if (!a.fn_field) return type_error("the aggregate function needs a field");
        switch (a.fn) {
            case AggregateFn::sum:
            case AggregateFn::avg: b << ", eventd_num_sum("; break;
            case AggregateFn::min: b << ", eventd_num_min("; break;
            default: b << ", eventd_num_max("; break;
        }
        b.field(*a.fn_field);
        b << ")";
    }
    b << " FROM events";
    if (auto st = emit_where(q, restricted, true, b); !st) return st.error();
    b << " GROUP BY ";
    for (size_t i = 0; i < a.fields.size(); ++i) b << (i ? ", g" : "g") << std::to_string(i);
    plan.group_columns = a.fields.size();
    plan.sql = std::move(b.sql);
    plan.params = std::move(b.params);
    return plan;
}

void visible_function(sqlite3_context* ctx, int, sqlite3_value** argv) {
    auto* const* slot = static_cast<access::CallerAccess* const*>(sqlite3_user_data(ctx));
    const auto* text = reinterpret_cast<const char*>(sqlite3_value_text(argv[0]));
    if (!text || !slot || !*slot) {
        sqlite3_result_int(ctx, 0);
        return;
    }
    try {
        const std::string_view type(text, static_cast<size_t>(sqlite3_value_bytes(argv[0])));
        sqlite3_result_int(ctx, (*slot)->visible(type) ? 1 : 0);
    } catch (...) {
        sqlite3_result_error_nomem(ctx);
    }
}

}  // namespace

kmes::Result<Plan> plan_query(const Query& q, bool restricted) {
    if (q.mode != Mode::events) return type_error("only EVENTS queries can be planned");
    if (q.aggregation.kind == Aggregation::Kind::none) return plan_plain(q, restricted);
    return plan_aggregate(q, restricted);
}

kmes::Result<Plan> plan_live(const Query& q, bool restricted) {
    if (q.mode != Mode::events) return type_error("only EVENTS queries can be streamed");
    Plan plan;
    Builder b;
    b << "SELECT " << kRecordColumns << ", id FROM events";
    b.params.emplace_back(std::in_place_type<int64_t>, 0);  // id > ?  (watermark; rebound per read)
    b.params.emplace_back(std::in_place_type<int64_t>, 0);  // id <= ? (the snapshot's max(id))
    if (auto st = emit_where(q, restricted, false, b, "id > ? AND id <= ?"); !st) return st.error();
    b << " ORDER BY id LIMIT " << std::to_string(kLiveBatchRows);
    plan.sql = std::move(b.sql);
    plan.params = std::move(b.params);
    return plan;
}

int bind_params(sqlite3_stmt* stmt, const std::vector<SqlParam>& params, int first) {
    int index = first;
    for (const SqlParam& p : params) {
        if (const auto* i = std::get_if<int64_t>(&p)) {
            sqlite3_bind_int64(stmt, index, *i);
        } else if (const auto* d = std::get_if<double>(&p)) {
            sqlite3_bind_double(stmt, index, *d);
        } else if (const auto* s = std::get_if<std::string>(&p)) {
            sqlite3_bind_text(stmt, index, s->data(), static_cast<int>(s->size()), SQLITE_TRANSIENT);
        } else {
            const auto& blob = std::get<SqlBlob>(p).bytes;
            sqlite3_bind_blob(stmt, index, blob.data(), static_cast<int>(blob.size()), SQLITE_TRANSIENT);
        }
        ++index;
    }
    return index;
}

kmes::Status register_visibility(sqlite3* db, access::CallerAccess* const* slot) {
    const int rc = sqlite3_create_function_v2(db, "eventd_visible", 1, SQLITE_UTF8 | SQLITE_DIRECTONLY,
                                              const_cast<access::CallerAccess**>(slot), visible_function, nullptr,
                                              nullptr, nullptr);
    if (rc != SQLITE_OK) return Error{EIO, std::string("cannot prepare the access check: ") + sqlite3_errstr(rc)};
    return {};
}

}  // namespace eventd::query
