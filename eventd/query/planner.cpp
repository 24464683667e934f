// Query → the checked read plan every shard runs (PSD-008 §8.6.3); store/read_sql.cpp turns
// it into SQL. This file is the query language's type checker: every type error (a string
// compared with `>`, a non-GUID for a GUID column, …) is found here, before anything runs, and
// reported with the decided texts (never SQL).
//
// Comparison semantics (§8.1, decided for this implementation):
// - strings compare case-insensitively (ASCII, SQLite NOCASE / LIKE), payload fields included;
//   `%`, `_`, `\` and `*` in a string value are literal;
// - `> >= < <=` need a number or time literal; on a payload field only numeric values can
//   satisfy them (a text payload value never satisfies `> 5`);
// - GUID columns take GUID strings (braces optional, any case) compared as 16 bytes;
// - integer columns take integer, float, time and boolean literals, never strings;
// - NULL (a missing payload field) matches neither ==, != nor NOT_IN: SQL NULL semantics.
#include "store/secondary_index.hpp"
#include "eventd/query/planner.hpp"

#include "base/guid_text.hpp"

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <limits>

#include "eventd/query/record.hpp"
#include "kmes/guid.hpp"

namespace eventd::query {
namespace {

using base::Error;
using store::Predicate;
using store::ReadField;
using store::ReadOp;
using store::ReadPlan;
using store::SqlBlob;
using store::SqlParam;

enum class FieldKind { guid, integer, text, payload };

FieldKind kind_of(const FieldRef& f) {
    if (!f.header) return FieldKind::payload;
    if (is_guid_column(*f.header)) return FieldKind::guid;
    if (*f.header == HeaderField::event_type) return FieldKind::text;
    return FieldKind::integer;
}

const char* literal_type(const Literal& v) {
    switch (v.index()) {
        case 0:
            return "an integer";
        case 1:
            return "a float";
        case 2:
            return "a string";
        case 3:
            return "a boolean";
        default:
            return "a time";
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

Error type_error(std::string message) { return Error{EINVAL, std::move(message)}; }

// A field as the store reads it: a header column, or the payload path '$.a.b'.
ReadField read_field(const FieldRef& f) {
    if (f.header) return ReadField::of(*f.header);
    std::string path = "$";
    if (f.path.empty()) {
        path += "." + f.name;
    } else {
        for (const std::string& part : f.path) path += "." + part;
    }
    return ReadField::payload(std::move(path));
}

Predicate compare(const FieldRef& f, ReadOp op, std::vector<SqlParam> values = {}, bool nocase = false) {
    Predicate p;
    p.field = read_field(f);
    p.op = op;
    p.values = std::move(values);
    p.nocase = nocase;
    return p;
}

ReadOp read_op(CompareOp op) {
    switch (op) {
        case CompareOp::eq:
            return ReadOp::eq;
        case CompareOp::ne:
            return ReadOp::ne;
        case CompareOp::gt:
            return ReadOp::gt;
        case CompareOp::ge:
            return ReadOp::ge;
        case CompareOp::lt:
            return ReadOp::lt;
        case CompareOp::le:
            return ReadOp::le;
        case CompareOp::starts_with:
            return ReadOp::starts_with;
        case CompareOp::ends_with:
            return ReadOp::ends_with;
        case CompareOp::contains:
            return ReadOp::contains;
        case CompareOp::in:
            return ReadOp::in;
        case CompareOp::not_in:
            return ReadOp::not_in;
        case CompareOp::has:
            return ReadOp::has;
        case CompareOp::is_null:
            return ReadOp::is_null;
        case CompareOp::is_not_null:
            return ReadOp::is_not_null;
    }
    return ReadOp::eq;
}

base::Result<Predicate> check_ordering(const Comparison& c) {
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
    return compare(c.field, read_op(c.op), {*num});
}

base::Result<Predicate> check_text_match(const Comparison& c) {
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
    return compare(c.field, read_op(c.op), {SqlParam{*text}});
}

// The parameter for one ==/!=/IN/NOT_IN value; *is_text set when it compares as a string.
base::Result<SqlParam> equality_param(const FieldRef& f, const Literal& v, bool* is_text) {
    switch (kind_of(f)) {
        case FieldKind::guid: {
            const auto* text = std::get_if<std::string>(&v);
            std::optional<kmes::Guid> guid;
            if (text) guid = base::parse_guid(*text);
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

base::Result<Predicate> check_equality(const Comparison& c) {
    if (c.values.empty()) return type_error(std::string(operator_text(c.op)) + " needs a value");
    bool any_text = false;
    std::vector<SqlParam> params;
    for (const Literal& v : c.values) {
        auto p = equality_param(c.field, v, &any_text);
        if (!p) return p.error();
        params.push_back(std::move(*p));
    }
    if ((c.op == CompareOp::eq || c.op == CompareOp::ne) && params.size() != 1) {
        return type_error(std::string("operator ") + operator_text(c.op) + " needs one value");
    }
    return compare(c.field, read_op(c.op), std::move(params), any_text);
}

// HAS (array membership): only a payload value can be an array; its element must equal one
// string (ASCII case ignored) or number (exactly) — store/msgpack_extract.hpp.
base::Result<Predicate> check_membership(const Comparison& c) {
    if (c.values.size() != 1) return type_error("HAS needs one value");
    if (kind_of(c.field) != FieldKind::payload) {
        return type_error("HAS looks for an element of an array; field " + c.field.name +
                          " is a header field, never an array");
    }
    const Literal& v = c.values.front();
    if (const auto* text = std::get_if<std::string>(&v)) return compare(c.field, ReadOp::has, {SqlParam{*text}});
    return compare(c.field, ReadOp::has, {*numeric_param(v)});
}

base::Result<Predicate> check_comparison(const Comparison& c) {
    switch (c.op) {
        case CompareOp::is_null:
        case CompareOp::is_not_null:
            return compare(c.field, read_op(c.op));
        case CompareOp::gt:
        case CompareOp::ge:
        case CompareOp::lt:
        case CompareOp::le:
            return check_ordering(c);
        case CompareOp::starts_with:
        case CompareOp::ends_with:
        case CompareOp::contains:
            return check_text_match(c);
        case CompareOp::eq:
        case CompareOp::ne:
        case CompareOp::in:
        case CompareOp::not_in:
            return check_equality(c);
        case CompareOp::has:
            return check_membership(c);
    }
    return type_error("unsupported operator");
}

base::Result<Predicate> check_condition(const Condition& c) {
    if (c.kind == Condition::Kind::compare) return check_comparison(c.comparison);
    Predicate p;
    p.kind = c.kind == Condition::Kind::all_of ? Predicate::Kind::all_of : Predicate::Kind::any_of;
    for (const Condition& child : c.children) {
        auto checked = check_condition(child);
        if (!checked) return checked.error();
        p.children.push_back(std::move(*checked));
    }
    return p;
}

// The filters: type pattern, SINCE/UNTIL (when `with_time`), every WHERE group, visibility.
base::Status check_filters(const Query& q, bool restricted, bool with_time, ReadPlan& plan) {
    // A pattern of only `*` matches every type: no predicate.
    const auto& pattern = q.type_pattern;
    if (pattern && (pattern->empty() || pattern->find_first_not_of('*') != std::string::npos)) {
        Predicate p;
        p.field = ReadField::of(store::EventColumn::event_type);
        p.op = ReadOp::glob;
        p.values.emplace_back(std::in_place_type<std::string>, *pattern);
        plan.where.push_back(std::move(p));
    }
    const ReadField timestamp = ReadField::of(store::EventColumn::timestamp);
    if (with_time && q.since_ns) {
        plan.bounds.push_back(
            Predicate{Predicate::Kind::compare, timestamp, ReadOp::ge, {SqlParam{*q.since_ns}}, false, {}});
    }
    if (with_time && q.until_ns) {
        plan.bounds.push_back(
            Predicate{Predicate::Kind::compare, timestamp, ReadOp::le, {SqlParam{*q.until_ns}}, false, {}});
    }
    for (const Condition& c : q.where) {
        auto checked = check_condition(c);
        if (!checked) return checked.error();
        plan.where.push_back(std::move(*checked));
    }
    plan.visible_only = restricted;
    return {};
}

bool text_possible(const FieldRef& f) { return kind_of(f) == FieldKind::text || kind_of(f) == FieldKind::payload; }

base::Result<Plan> plan_plain(const Query& q, bool restricted) {
    Plan plan;
    ReadPlan& read = plan.read;
    read.shape = ReadPlan::Shape::rows;
    std::vector<SortKey> sort = q.sort;
    if (sort.empty()) {
        SortKey k;
        k.field.name = "timestamp";
        k.field.header = HeaderField::timestamp;
        k.descending = true;
        sort.push_back(std::move(k));
    }
    for (const SortKey& k : sort) {
        read.sort.push_back(store::ReadSortKey{read_field(k.field), k.descending, text_possible(k.field)});
    }
    for (size_t i = 0; i < read.sort.size(); ++i) {
        plan.sort.push_back(SortColumn{store::sort_key_column(read, i), read.sort[i].descending, read.sort[i].nocase});
    }
    if (auto st = check_filters(q, restricted, true, read); !st) return st.error();
    if (q.take) {
        const uint64_t skip = q.skip.value_or(0);
        const uint64_t max = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
        if (skip <= max && *q.take <= max - skip) {
            plan.shard_limit = skip + *q.take;
            read.limit = static_cast<int64_t>(*plan.shard_limit);
        }
    }
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

base::Result<Plan> plan_aggregate(const Query& q, bool restricted) {
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
    ReadPlan& read = plan.read;
    if (a.kind == Aggregation::Kind::count) {
        read.shape = ReadPlan::Shape::count;
        if (auto st = check_filters(q, restricted, true, read); !st) return st.error();
        return plan;
    }
    if (a.fields.empty()) return type_error("the aggregation needs a field");
    read.shape = ReadPlan::Shape::groups;
    for (const FieldRef& f : a.fields) read.group_by.push_back(read_field(f));
    if (a.kind == Aggregation::Kind::group && a.fn != AggregateFn::count) {
        if (!a.fn_field) return type_error("the aggregate function needs a field");
        switch (a.fn) {
            case AggregateFn::sum:
            case AggregateFn::avg:
                read.partial = store::Partial::sum;
                break;
            case AggregateFn::min:
                read.partial = store::Partial::min;
                break;
            default:
                read.partial = store::Partial::max;
                break;
        }
        read.partial_field = read_field(*a.fn_field);
    }
    if (auto st = check_filters(q, restricted, true, read); !st) return st.error();
    plan.group_columns = a.fields.size();
    return plan;
}

}  // namespace

namespace {

// Payload paths are written into SQL as literals (secondary_index.hpp payload_field_sql, so
// expression indexes apply): only the identifier paths the lexer produces are allowed — a
// query built some other way with a stranger name is refused, never quoted into the SQL.
base::Status check_field_name(const FieldRef& f) {
    if (f.header) return {};
    if (store::is_valid_payload_path(read_field(f).payload_path.substr(2))) return {};
    return type_error("'" + f.name + "' is not a valid field name");
}

base::Status check_condition_names(const Condition& c) {
    if (c.kind == Condition::Kind::compare) return check_field_name(c.comparison.field);
    for (const Condition& child : c.children)
        if (auto st = check_condition_names(child); !st) return st;
    return {};
}

// The size limits of planner.hpp, in the words of the query.
struct Size {
    size_t conditions = 0;
    size_t values = 0;
    std::optional<std::string> long_match;  // the first text match over kMaxMatchTextBytes
};

void measure(const Condition& c, Size& size) {
    if (c.kind != Condition::Kind::compare) {
        for (const Condition& child : c.children) measure(child, size);
        return;
    }
    ++size.conditions;
    size.values += c.comparison.values.size();
    const CompareOp op = c.comparison.op;
    if (size.long_match || (op != CompareOp::starts_with && op != CompareOp::ends_with && op != CompareOp::contains))
        return;
    for (const Literal& v : c.comparison.values) {
        const auto* text = std::get_if<std::string>(&v);
        if (text && text->size() > kMaxMatchTextBytes)
            size.long_match = "a text match on " + c.comparison.field.name + " of " + std::to_string(text->size()) +
                              " bytes; at most " + std::to_string(kMaxMatchTextBytes);
    }
}

Error too_complex(const std::string& what) { return Error{EINVAL, "query is too complex: " + what}; }

base::Status check_size(const Query& q) {
    Size size;
    for (const Condition& c : q.where) measure(c, size);
    if (size.conditions > kMaxWhereConditions)
        return too_complex("WHERE has " + std::to_string(size.conditions) +
                           " conditions (all WHERE clauses together); at most " + std::to_string(kMaxWhereConditions) +
                           " — for many values of one field use IN (…)");
    if (size.values > kMaxWhereValues)
        return too_complex("WHERE has " + std::to_string(size.values) + " values; at most " +
                           std::to_string(kMaxWhereValues));
    if (size.long_match) return too_complex(*size.long_match);
    if (q.type_pattern && q.type_pattern->size() > kMaxMatchTextBytes)
        return too_complex("a type pattern of " + std::to_string(q.type_pattern->size()) + " bytes; at most " +
                           std::to_string(kMaxMatchTextBytes));
    if (q.sort.size() > kMaxSortKeys)
        return too_complex("SORT has " + std::to_string(q.sort.size()) + " keys; at most " +
                           std::to_string(kMaxSortKeys));
    if (q.aggregation.fields.size() > kMaxGroupFields)
        return too_complex("GROUP has " + std::to_string(q.aggregation.fields.size()) + " fields; at most " +
                           std::to_string(kMaxGroupFields));
    return {};
}

base::Status check_field_names(const Query& q) {
    for (const Condition& c : q.where)
        if (auto st = check_condition_names(c); !st) return st;
    for (const SortKey& k : q.sort)
        if (auto st = check_field_name(k.field); !st) return st;
    for (const FieldRef& f : q.aggregation.fields)
        if (auto st = check_field_name(f); !st) return st;
    if (q.aggregation.fn_field) return check_field_name(*q.aggregation.fn_field);
    return {};
}

}  // namespace

base::Result<Plan> plan_query(const Query& q, bool restricted) {
    if (q.mode != Mode::events) return type_error("only EVENTS queries can be planned");
    if (auto st = check_size(q); !st) return st.error();
    if (auto st = check_field_names(q); !st) return st.error();
    if (q.aggregation.kind == Aggregation::Kind::none) return plan_plain(q, restricted);
    return plan_aggregate(q, restricted);
}

void bound_by_type_verdict(const Query& q, access::CallerAccess::Visibility visibility, ReadPlan& read) {
    using Visibility = access::CallerAccess::Visibility;
    // Only the caller's own records (`self`): the verdict is per row and stays in the guard.
    // Bounding the scan by the type would also make the number of the others' records of the
    // type show in the query's time.
    if (visibility == Visibility::own_records) return;
    const bool visible = visibility == Visibility::all;
    if (!read.visible_only || !q.type_pattern || q.type_pattern->find('*') != std::string::npos) return;
    const auto type = std::find_if(read.where.begin(), read.where.end(), [](const Predicate& p) {
        return p.kind == Predicate::Kind::compare && p.op == ReadOp::glob &&
               p.field.column == store::EventColumn::event_type;
    });
    if (type == read.where.end()) return;
    if (!visible) {
        Predicate nothing;
        nothing.kind = Predicate::Kind::any_of;  // no alternatives: false
        read.bounds.push_back(std::move(nothing));
        return;
    }
    read.bounds.push_back(std::move(*type));
    read.where.erase(type);
}

base::Result<Plan> plan_live(const Query& q, bool restricted) {
    if (q.mode != Mode::events) return type_error("only EVENTS queries can be streamed");
    if (auto st = check_size(q); !st) return st.error();
    if (auto st = check_field_names(q); !st) return st.error();
    Plan plan;
    plan.read.shape = ReadPlan::Shape::live;
    if (auto st = check_filters(q, restricted, false, plan.read); !st) return st.error();
    return plan;
}

}  // namespace eventd::query
