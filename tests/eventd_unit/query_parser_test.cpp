// The query parser (PSD-008 §8.1, §8.2, §8.6.1): every clause, operator and literal, the
// precedence of AND over OR, clause order independence, keyword case, and the exact text of
// the errors. Queries are rendered to a compact canonical form so the expectations read like
// the language itself:  where=(or a == 1 (and b == 2 c == 3)).
#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "eventd/query_language/parser.hpp"
#include "eventd/query_language/time_literal.hpp"

using namespace eventd::query;

namespace {

// "Now" for every test: 2026-11-22T15:30:45Z.
constexpr int64_t kNow = 1'795'361'445'000'000'000;
constexpr int64_t kToday = 1'795'305'600'000'000'000;      // 2026-11-22T00:00:00Z
constexpr int64_t kYesterday = 1'795'219'200'000'000'000;  // 2026-11-21T00:00:00Z
constexpr int64_t kNov1 = 1'793'491'200'000'000'000;       // 2026-11-01T00:00:00Z
constexpr int64_t kSecond = 1'000'000'000;

std::string render(const Literal& v) {
    std::ostringstream out;
    if (auto* i = std::get_if<int64_t>(&v)) out << *i;
    if (auto* d = std::get_if<double>(&v)) out << "float:" << *d;
    if (auto* s = std::get_if<std::string>(&v)) out << '"' << *s << '"';
    if (auto* b = std::get_if<bool>(&v)) out << (*b ? "true" : "false");
    if (auto* t = std::get_if<TimeLiteral>(&v)) out << "time:" << t->ns;
    return out.str();
}

std::string render(const Condition& c) {
    if (c.kind != Condition::Kind::compare) {
        std::string out = c.kind == Condition::Kind::all_of ? "(and" : "(or";
        for (const auto& child : c.children) out += " " + render(child);
        return out + ")";
    }
    const Comparison& cmp = c.comparison;
    std::string out = cmp.field.name + " " + operator_text(cmp.op);
    if (cmp.op == CompareOp::in || cmp.op == CompareOp::not_in) {
        out += " (";
        for (size_t i = 0; i < cmp.values.size(); ++i) out += (i ? ", " : "") + render(cmp.values[i]);
        return out + ")";
    }
    for (const auto& v : cmp.values) out += " " + render(v);
    return out;
}

std::string render_fields(const std::vector<FieldRef>& fields) {
    std::string out;
    for (size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + fields[i].name;
    return out;
}

// One line per query: only the parts that are set, in a fixed order.
std::string render(const Query& q) {
    std::string out = q.mode == Mode::status ? "STATUS" : "EVENTS";
    if (q.type_pattern) out += " pattern=" + *q.type_pattern;
    if (q.since_ns) out += " since=" + std::to_string(*q.since_ns);
    if (q.until_ns) out += " until=" + std::to_string(*q.until_ns);
    for (const auto& w : q.where) out += " where=" + render(w);
    if (!q.select.empty()) out += " select=" + render_fields(q.select);
    if (!q.sort.empty()) {
        out += " sort=";
        for (size_t i = 0; i < q.sort.size(); ++i) {
            out += (i ? "," : "") + q.sort[i].field.name + (q.sort[i].descending ? " desc" : "");
        }
    }
    if (q.skip) out += " skip=" + std::to_string(*q.skip);
    if (q.take) out += " take=" + std::to_string(*q.take);
    const Aggregation& a = q.aggregation;
    switch (a.kind) {
        case Aggregation::Kind::none:
            break;
        case Aggregation::Kind::count:
            out += " count";
            break;
        case Aggregation::Kind::count_by:
            out += " count_by=" + render_fields(a.fields);
            break;
        case Aggregation::Kind::top_by:
            out += " top=" + std::to_string(a.top_n) + " by=" + render_fields(a.fields);
            break;
        case Aggregation::Kind::distinct:
            out += " distinct=" + render_fields(a.fields);
            break;
        case Aggregation::Kind::group: {
            static const char* kFn[] = {"count", "sum", "avg", "min", "max"};
            out += " group=" + render_fields(a.fields) + " " + kFn[static_cast<int>(a.fn)];
            if (a.fn_field) out += "(" + a.fn_field->name + ")";
            break;
        }
    }
    if (q.stream) out += " stream";
    return out;
}

Query parsed(const std::string& text) {
    auto r = parse(text, kNow);
    INFO("query: " << text);
    if (!r.ok()) FAIL("unexpected error: " << r.error().message);
    return r.value();
}

std::string rendered(const std::string& text) { return render(parsed(text)); }

std::string error_of(const std::string& text) {
    auto r = parse(text, kNow);
    if (r.ok()) return "no error, parsed as: " + render(r.value());
    CHECK(r.error().code == base::ErrorCode::invalid);
    return r.error().message;
}

struct Case {
    const char* query;
    const char* expected;
};

void check_table(const std::vector<Case>& cases, std::string (*run)(const std::string&)) {
    for (const auto& c : cases) {
        INFO("query: " << c.query);
        CHECK(run(c.query) == c.expected);
    }
}

}  // namespace

TEST_CASE("the mode comes from the first word", "[parser]") {
    check_table(
        {
            {"EVENTS", "EVENTS"},
            {"events", "EVENTS"},
            {"  \n EVENTS \t", "EVENTS"},
            {"STATUS", "STATUS"},
            {"status", "STATUS"},
        },
        rendered);
}

TEST_CASE("a type pattern may follow EVENTS", "[parser]") {
    check_table(
        {
            {"EVENTS kacs.access_denied", "EVENTS pattern=kacs.access_denied"},
            {"EVENTS kacs.*", "EVENTS pattern=kacs.*"},
            {"EVENTS *.denied", "EVENTS pattern=*.denied"},
            {"EVENTS kacs.*.denied", "EVENTS pattern=kacs.*.denied"},
            {"EVENTS *", "EVENTS pattern=*"},
            {"EVENTS synthetic.gap TAKE 1", "EVENTS pattern=synthetic.gap take=1"},
            {"EVENTS \"odd-type.x\"", "EVENTS pattern=odd-type.x"},
            {"EVENTS 'single.quoted'", "EVENTS pattern=single.quoted"},
            {"EVENTS STREAM kacs.*", "EVENTS pattern=kacs.* stream"},
            {"EVENTS Kacs.Access_Denied", "EVENTS pattern=Kacs.Access_Denied"},  // matching ignores case
        },
        rendered);
}

TEST_CASE("SINCE and UNTIL take every time literal", "[parser]") {
    const std::string now = std::to_string(kNow);
    check_table(
        {
            {"EVENTS SINCE 10s ago", ("EVENTS since=" + std::to_string(kNow - 10 * kSecond)).c_str()},
            {"EVENTS SINCE 30m ago", ("EVENTS since=" + std::to_string(kNow - 1800 * kSecond)).c_str()},
            {"EVENTS SINCE 1h ago", ("EVENTS since=" + std::to_string(kNow - 3600 * kSecond)).c_str()},
            {"EVENTS SINCE 2d ago", ("EVENTS since=" + std::to_string(kNow - 2 * 86400 * kSecond)).c_str()},
            {"EVENTS UNTIL 0s ago", ("EVENTS until=" + now).c_str()},
            {"EVENTS UNTIL 5m hence", ("EVENTS until=" + std::to_string(kNow + 300 * kSecond)).c_str()},
            {"EVENTS UNTIL 1d HENCE", ("EVENTS until=" + std::to_string(kNow + 86400 * kSecond)).c_str()},
            {"EVENTS SINCE today", ("EVENTS since=" + std::to_string(kToday)).c_str()},
            {"EVENTS SINCE yesterday UNTIL today",
             ("EVENTS since=" + std::to_string(kYesterday) + " until=" + std::to_string(kToday)).c_str()},
            {"EVENTS SINCE 2026-11-01", ("EVENTS since=" + std::to_string(kNov1)).c_str()},
            {"EVENTS SINCE 2026-11-01T12:00:00",
             ("EVENTS since=" + std::to_string(kNov1 + 12 * 3600 * kSecond)).c_str()},
            {"EVENTS SINCE 2026-11-01T12:00:00Z",
             ("EVENTS since=" + std::to_string(kNov1 + 12 * 3600 * kSecond)).c_str()},
            {"EVENTS SINCE 2026-11-01T00:00:01.25",
             ("EVENTS since=" + std::to_string(kNov1 + kSecond + 250'000'000)).c_str()},
            {"EVENTS SINCE 1793491200000000000", ("EVENTS since=" + std::to_string(kNov1)).c_str()},  // plain ns
        },
        rendered);
}

TEST_CASE("time literals: calendar validation and arithmetic", "[parser]") {
    CHECK(date_ns("1970-01-01") == 0);
    CHECK(date_ns("2024-02-29") == 1'709'164'800'000'000'000);  // leap year
    CHECK(date_ns("2000-02-29").has_value());                   // divisible by 400
    CHECK_FALSE(date_ns("2100-02-29").has_value());             // divisible by 100 only
    CHECK_FALSE(date_ns("2026-02-29").has_value());
    CHECK_FALSE(date_ns("2026-02-30").has_value());
    CHECK_FALSE(date_ns("2026-04-31").has_value());
    CHECK_FALSE(date_ns("2026-13-01").has_value());
    CHECK_FALSE(date_ns("2026-00-10").has_value());
    CHECK_FALSE(date_ns("2026-01-00").has_value());
    CHECK_FALSE(date_ns("2026-01-01T24:00:00").has_value());
    CHECK_FALSE(date_ns("2026-01-01T23:60:00").has_value());
    CHECK_FALSE(date_ns("2026-01-01T23:59:60").has_value());
    CHECK_FALSE(date_ns("1969-12-31").has_value());
    CHECK(date_ns("2262-04-10").has_value());
    CHECK_FALSE(date_ns("2262-04-12").has_value());  // beyond 64-bit nanoseconds
    CHECK(date_ns("2026-11-01T12:00:00.000000001Z") == kNov1 + 12 * 3600 * kSecond + 1);
    CHECK(duration_ns("90s") == 90 * kSecond);
    CHECK_FALSE(duration_ns("99999999999999999d").has_value());
    CHECK(midnight_ns(kToday, 0) == kToday);  // exactly midnight is today
    CHECK(midnight_ns(kToday - 1, 0) == kYesterday);
    CHECK(midnight_ns(-1, 0) == -86400 * kSecond);  // rounds down, not towards zero
    CHECK_FALSE(relative_ns(INT64_MAX - 5, 10, false).has_value());
}

TEST_CASE("every comparison operator", "[parser]") {
    check_table(
        {
            {"EVENTS WHERE cpu_id == 3", "EVENTS where=cpu_id == 3"},
            {"EVENTS WHERE cpu_id != 3", "EVENTS where=cpu_id != 3"},
            {"EVENTS WHERE cpu_id > 3", "EVENTS where=cpu_id > 3"},
            {"EVENTS WHERE cpu_id >= 3", "EVENTS where=cpu_id >= 3"},
            {"EVENTS WHERE cpu_id < 3", "EVENTS where=cpu_id < 3"},
            {"EVENTS WHERE cpu_id <= 3", "EVENTS where=cpu_id <= 3"},
            {"EVENTS WHERE cpu_id<=3", "EVENTS where=cpu_id <= 3"},  // no spaces needed
            {"EVENTS WHERE user STARTS_WITH \"al\"", "EVENTS where=user STARTS_WITH \"al\""},
            {"EVENTS WHERE user ENDS_WITH \"ce\"", "EVENTS where=user ENDS_WITH \"ce\""},
            {"EVENTS WHERE user CONTAINS \"lic\"", "EVENTS where=user CONTAINS \"lic\""},
            {"EVENTS WHERE user starts_with 'al'", "EVENTS where=user STARTS_WITH \"al\""},
            {"EVENTS WHERE cpu_id IN (1, 2, 3)", "EVENTS where=cpu_id IN (1, 2, 3)"},
            {"EVENTS WHERE cpu_id IN (7)", "EVENTS where=cpu_id IN (7)"},
            {"EVENTS WHERE user NOT_IN (\"a\",\"b\")", "EVENTS where=user NOT_IN (\"a\", \"b\")"},
            {"EVENTS WHERE user IS NULL", "EVENTS where=user IS NULL"},
            {"EVENTS WHERE user IS NOT NULL", "EVENTS where=user IS NOT NULL"},
            {"EVENTS WHERE user is not null", "EVENTS where=user IS NOT NULL"},
        },
        rendered);
}

TEST_CASE("every literal kind", "[parser]") {
    check_table(
        {
            {"EVENTS WHERE x == \"text\"", "EVENTS where=x == \"text\""},
            {"EVENTS WHERE x == 'text'", "EVENTS where=x == \"text\""},
            {"EVENTS WHERE x == \"\"", "EVENTS where=x == \"\""},
            {"EVENTS WHERE x == \"a\\\"b\\\\c\"", "EVENTS where=x == \"a\"b\\c\""},
            {"EVENTS WHERE x == 'it\\'s'", "EVENTS where=x == \"it's\""},
            {"EVENTS WHERE x == \"say \\\"hi\\\"\"", "EVENTS where=x == \"say \"hi\"\""},
            {"EVENTS WHERE x == \"a\\tb\"", "EVENTS where=x == \"a\tb\""},
            {"EVENTS WHERE x == \"a\\nb\"", "EVENTS where=x == \"a\nb\""},
            {"EVENTS WHERE x == \"ünïcödé\"", "EVENTS where=x == \"ünïcödé\""},
            {"EVENTS WHERE x == 42", "EVENTS where=x == 42"},
            {"EVENTS WHERE x == -42", "EVENTS where=x == -42"},
            {"EVENTS WHERE x == 0x1F01FF", "EVENTS where=x == 2032127"},
            {"EVENTS WHERE x == 0Xff", "EVENTS where=x == 255"},
            {"EVENTS WHERE x == -0x10", "EVENTS where=x == -16"},
            {"EVENTS WHERE x == 9223372036854775807", "EVENTS where=x == 9223372036854775807"},
            {"EVENTS WHERE x == -9223372036854775808", "EVENTS where=x == -9223372036854775808"},
            {"EVENTS WHERE x == 1.5", "EVENTS where=x == float:1.5"},
            {"EVENTS WHERE x == -0.25", "EVENTS where=x == float:-0.25"},
            {"EVENTS WHERE x == 2e3", "EVENTS where=x == float:2000"},
            {"EVENTS WHERE x == 1.5e-3", "EVENTS where=x == float:0.0015"},
            {"EVENTS WHERE x == true", "EVENTS where=x == true"},
            {"EVENTS WHERE x == FALSE", "EVENTS where=x == false"},
            {"EVENTS WHERE process_guid == {550E8400-e29b-41d4-a716-446655440000}",
             "EVENTS where=process_guid == \"550E8400-e29b-41d4-a716-446655440000\""},
            {"EVENTS WHERE process_guid == \"{550e8400-e29b-41d4-a716-446655440000}\"",
             "EVENTS where=process_guid == \"{550e8400-e29b-41d4-a716-446655440000}\""},
            {"EVENTS WHERE timestamp > 1h ago", "EVENTS where=timestamp > time:1795357845000000000"},
            {"EVENTS WHERE timestamp < 30m hence", "EVENTS where=timestamp < time:1795363245000000000"},
            {"EVENTS WHERE timestamp >= today", "EVENTS where=timestamp >= time:1795305600000000000"},
            {"EVENTS WHERE timestamp >= yesterday", "EVENTS where=timestamp >= time:1795219200000000000"},
            {"EVENTS WHERE timestamp >= 2026-11-01", "EVENTS where=timestamp >= time:1793491200000000000"},
            {"EVENTS WHERE timestamp < 2026-11-01T12:00:00", "EVENTS where=timestamp < time:1793534400000000000"},
            {"EVENTS WHERE origin_class == userspace", "EVENTS where=origin_class == 0"},
            {"EVENTS WHERE origin_class == KMES", "EVENTS where=origin_class == 1"},
            {"EVENTS WHERE origin_class == kacs", "EVENTS where=origin_class == 2"},
            {"EVENTS WHERE origin_class IN (Lcs, kacs)", "EVENTS where=origin_class IN (3, 2)"},
            {"EVENTS audit.* WHERE origin_class == audit", "EVENTS pattern=audit.* where=origin_class == 4"},
            {"EVENTS WHERE x IN (\"a\", 1, 2.5, true, today)",
             "EVENTS where=x IN (\"a\", 1, float:2.5, true, time:1795305600000000000)"},
        },
        rendered);
}

TEST_CASE("fields: header columns, payload paths, positions", "[parser]") {
    Query q = parsed("EVENTS WHERE cpu_id == 1 AND source.name == \"x\" AND CPU_ID == 2 SELECT process_guid, a.b.c");
    REQUIRE(q.where.size() == 1);
    const auto& c = q.where[0].children;
    REQUIRE(c.size() == 3);
    CHECK(c[0].comparison.field.header == HeaderField::cpu_id);
    CHECK(c[0].comparison.field.path.empty());
    CHECK(c[0].comparison.field.position == 14);
    CHECK_FALSE(c[1].comparison.field.header.has_value());
    CHECK(c[1].comparison.field.path == std::vector<std::string>{"source", "name"});
    CHECK(c[1].comparison.field.position == 30);
    CHECK_FALSE(c[2].comparison.field.header.has_value());  // header names are case-sensitive
    CHECK(c[2].comparison.field.path == std::vector<std::string>{"CPU_ID"});
    REQUIRE(q.select.size() == 2);
    CHECK(q.select[0].header == HeaderField::process_guid);
    CHECK(q.select[1].path == std::vector<std::string>{"a", "b", "c"});
}

TEST_CASE("header field names and GUID columns", "[parser]") {
    for (auto f : {HeaderField::timestamp, HeaderField::cpu_id, HeaderField::sequence, HeaderField::origin_class,
                   HeaderField::event_type, HeaderField::effective_token_guid, HeaderField::true_token_guid,
                   HeaderField::process_guid, HeaderField::boot_id}) {
        CHECK(header_field(header_name(f)) == f);
    }
    CHECK(std::string(header_name(HeaderField::effective_token_guid)) == "effective_token_guid");
    CHECK_FALSE(header_field("payload").has_value());
    CHECK_FALSE(header_field("Timestamp").has_value());
    CHECK(is_guid_column(HeaderField::boot_id));
    CHECK(is_guid_column(HeaderField::process_guid));
    CHECK(is_guid_column(HeaderField::effective_token_guid));
    CHECK(is_guid_column(HeaderField::true_token_guid));
    CHECK_FALSE(is_guid_column(HeaderField::event_type));
    CHECK_FALSE(is_guid_column(HeaderField::timestamp));
}

TEST_CASE("AND binds tighter than OR; parentheses group", "[parser]") {
    check_table(
        {
            {"EVENTS WHERE a == 1 OR b == 2 AND c == 3", "EVENTS where=(or a == 1 (and b == 2 c == 3))"},
            {"EVENTS WHERE a == 1 AND b == 2 OR c == 3", "EVENTS where=(or (and a == 1 b == 2) c == 3)"},
            {"EVENTS WHERE (a == 1 OR b == 2) AND c == 3", "EVENTS where=(and (or a == 1 b == 2) c == 3)"},
            {"EVENTS WHERE a == 1 AND b == 2 AND c == 3", "EVENTS where=(and a == 1 b == 2 c == 3)"},
            {"EVENTS WHERE a == 1 or b == 2 and c == 3 or d == 4",
             "EVENTS where=(or a == 1 (and b == 2 c == 3) d == 4)"},
            {"EVENTS WHERE ((a == 1))", "EVENTS where=a == 1"},
            {"EVENTS WHERE a == 1 AND (b == 2 OR (c == 3 AND d == 4))",
             "EVENTS where=(and a == 1 (or b == 2 (and c == 3 d == 4)))"},
        },
        rendered);
}

TEST_CASE("several WHERE clauses are kept apart (each ANDed as a group)", "[parser]") {
    check_table(
        {
            {"EVENTS WHERE a == 1 OR b == 2 WHERE c == 3", "EVENTS where=(or a == 1 b == 2) where=c == 3"},
            {"EVENTS WHERE a == 1 TAKE 5 WHERE b == 2", "EVENTS where=a == 1 where=b == 2 take=5"},
        },
        rendered);
}

TEST_CASE("SELECT accumulates, SORT takes directions, SKIP and TAKE take counts", "[parser]") {
    check_table(
        {
            {"EVENTS SELECT a", "EVENTS select=a"},
            {"EVENTS SELECT a, b.c SELECT d", "EVENTS select=a,b.c,d"},
            {"EVENTS SELECT a, b SELECT a", "EVENTS select=a,b"},  // a name once
            {"EVENTS SORT cpu_id", "EVENTS sort=cpu_id"},
            {"EVENTS SORT cpu_id DESC", "EVENTS sort=cpu_id desc"},
            {"EVENTS SORT cpu_id ASC, sequence desc, user", "EVENTS sort=cpu_id,sequence desc,user"},
            {"EVENTS SKIP 0", "EVENTS skip=0"},
            {"EVENTS SKIP 10 TAKE 5", "EVENTS skip=10 take=5"},
            {"EVENTS TAKE 0", "EVENTS take=0"},
            {"EVENTS TAKE 0x10", "EVENTS take=16"},
        },
        rendered);
}

TEST_CASE("aggregations", "[parser]") {
    check_table(
        {
            {"EVENTS COUNT", "EVENTS count"},
            {"EVENTS kacs.* COUNT SINCE 1h ago", "EVENTS pattern=kacs.* since=1795357845000000000 count"},
            {"EVENTS COUNT BY event_type", "EVENTS count_by=event_type"},
            {"EVENTS count by user.name", "EVENTS count_by=user.name"},
            {"EVENTS TOP 5 BY user", "EVENTS top=5 by=user"},
            {"EVENTS DISTINCT event_type", "EVENTS distinct=event_type"},
            {"EVENTS GROUP user COUNT", "EVENTS group=user count"},
            {"EVENTS GROUP user, cpu_id COUNT", "EVENTS group=user,cpu_id count"},
            {"EVENTS GROUP user SUM bytes", "EVENTS group=user sum(bytes)"},
            {"EVENTS GROUP user AVG bytes", "EVENTS group=user avg(bytes)"},
            {"EVENTS GROUP user MIN bytes", "EVENTS group=user min(bytes)"},
            {"EVENTS GROUP user MAX bytes", "EVENTS group=user max(bytes)"},
            {"EVENTS GROUP event_type count SORT count DESC TAKE 3",
             "EVENTS sort=count desc take=3 group=event_type count"},
            {"EVENTS WHERE count > 5", "EVENTS where=count > 5"},  // a payload field may share a keyword's name
        },
        rendered);
}

TEST_CASE("STREAM anywhere", "[parser]") {
    check_table(
        {
            {"EVENTS STREAM", "EVENTS stream"},
            {"EVENTS STREAM WHERE a == 1", "EVENTS where=a == 1 stream"},
            {"EVENTS WHERE a == 1 STREAM", "EVENTS where=a == 1 stream"},
            {"EVENTS kacs.* TAKE 10 STREAM SELECT a", "EVENTS pattern=kacs.* select=a take=10 stream"},
            {"events stream kacs.* take 1", "EVENTS pattern=kacs.* take=1 stream"},
        },
        rendered);
}

TEST_CASE("clause order does not matter", "[parser]") {
    const std::vector<std::string> orders = {
        "EVENTS kacs.* SINCE 1h ago UNTIL today WHERE a == 1 SELECT a SORT a DESC SKIP 2 TAKE 3 COUNT BY a STREAM",
        "EVENTS kacs.* STREAM COUNT BY a TAKE 3 SKIP 2 SORT a DESC SELECT a WHERE a == 1 UNTIL today SINCE 1h ago",
        "EVENTS STREAM kacs.* TAKE 3 WHERE a == 1 COUNT BY a SINCE 1h ago SELECT a SKIP 2 UNTIL today SORT a DESC",
    };
    const std::string expected = rendered(orders[0]);
    CHECK(expected ==
          "EVENTS pattern=kacs.* since=1795357845000000000 until=1795305600000000000 where=a == 1 select=a "
          "sort=a desc skip=2 take=3 count_by=a stream");
    for (const auto& q : orders) CHECK(rendered(q) == expected);
}

TEST_CASE("keywords ignore case", "[parser]") {
    const std::string expected =
        rendered("EVENTS kacs.* SINCE 1H AGO WHERE a == 1 AND b IS NOT NULL OR c IN (KACS) SORT a DESC TAKE 1 STREAM");
    for (const char* q : {
             "events kacs.* since 1h ago where a == 1 and b is not null or c in (kacs) sort a desc take 1 stream",
             "Events kacs.* Since 1h Ago Where a == 1 And b Is Not Null Or c In (Kacs) Sort a Desc Take 1 Stream",
         }) {
        INFO(q);
        CHECK(rendered(q) == expected);
    }
}

TEST_CASE("unsupported parts of the language say so", "[parser]") {
    check_table(
        {
            {"LOGS SINCE 1h ago", "LOGS queries are not supported"},
            {"logs", "LOGS queries are not supported"},
            {"METRIC cpu.load", "METRIC queries are not supported"},
            {"EVENTS WHERE METRIC cpu.load > 5", "cross-type filters are not supported"},
            {"EVENTS WHERE EVENT kacs.* EXISTS", "cross-type filters are not supported"},
            {"EVENTS WHERE LOG ERROR ONLY", "cross-type filters are not supported"},
            {"EVENTS WHERE a == 1 AND (log CONTAINING \"x\")", "cross-type filters are not supported"},
        },
        error_of);
    // A payload field named like a mode is still a field when an operator follows.
    CHECK(rendered("EVENTS WHERE event == 1 OR log IS NULL") == "EVENTS where=(or event == 1 log IS NULL)");
}

TEST_CASE("EVENTS INDEX takes one candidate field and nothing else", "[parser][index]") {
    auto header = parse("EVENTS INDEX event_type", 0);
    REQUIRE(header.ok());
    CHECK(header->mode == Mode::index);
    REQUIRE(header->index_field);
    CHECK(header->index_field->name == "event_type");
    CHECK(header->index_field->header.has_value());
    auto path = parse("events index source.name", 0);
    REQUIRE(path.ok());
    CHECK(path->mode == Mode::index);
    CHECK(path->index_field->name == "source.name");
    CHECK(path->index_field->path == std::vector<std::string>{"source", "name"});
    check_table(
        {
            {"EVENTS INDEX timestamp",
             "INDEX timestamp: timestamp is always indexed (idx_events_timestamp); nothing to do"},
            {"EVENTS INDEX sequence",
             "INDEX sequence: sequence cannot be indexed; candidates are event_type, origin_class, cpu_id, "
             "effective_token_guid, true_token_guid, process_guid, boot_id and payload paths"},
            {"EVENTS INDEX payload",
             "INDEX payload: the raw payload is never indexed; name a payload path such as user or source.name"},
            {"EVENTS TAKE 1 index user", "INDEX stands alone: EVENTS INDEX <field>, without other clauses"},
            {"EVENTS kacs.* INDEX user", "INDEX stands alone: EVENTS INDEX <field>, without other clauses"},
            {"EVENTS INDEX user TAKE 1",
             "parse error at position 19: expected end of query (INDEX stands alone: EVENTS INDEX <field>, without "
             "other clauses), found 'TAKE'"},
            {"EVENTS INDEX",
             "parse error at position 13: expected a field to index (a header column such as "
             "event_type, or a payload path such as user), found end of query"},
        },
        error_of);
}

TEST_CASE("malformed queries: position, what was expected, what was found", "[parser]") {
    const std::string clauses =
        "a clause (SINCE, UNTIL, WHERE, SELECT, SORT, SKIP, TAKE, COUNT, TOP, DISTINCT, GROUP, STREAM)";
    const std::string operators =
        "a comparison operator (==, !=, >, >=, <, <=, STARTS_WITH, ENDS_WITH, CONTAINS, IN, NOT_IN, HAS, IS)";
    const std::string time = "a time (such as 1h ago, today, 2026-11-01 or 2026-11-01T12:00:00)";
    const std::string date =
        "a valid UTC date or date-time between 1970-01-01 and 2262-04-11 (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS)";
    const std::string p = "parse error at position ";
    const std::vector<std::pair<std::string, std::string>> cases = {
        // mode
        {"", p + "1: expected EVENTS or STATUS, found end of query"},
        {"   ", p + "4: expected EVENTS or STATUS, found end of query"},
        {"SELECT a", p + "1: expected EVENTS or STATUS, found 'SELECT'"},
        {"STATUS TAKE 1", p + "8: expected end of query (STATUS takes no clauses), found 'TAKE'"},
        // type pattern and clause keywords
        {"EVENTS 42", p + "8: expected an event type pattern, " + clauses + " or end of query, found '42'"},
        {"EVENTS kacs.* foo", p + "15: expected " + clauses + " or end of query, found 'foo'"},
        {"EVENTS \"\"", p + "8: expected an event type pattern such as kacs.* (not empty), found '\"\"'"},
        // SKIP / TAKE / TOP
        {"EVENTS TAKE", p + "12: expected a non-negative integer, found end of query"},
        {"EVENTS TAKE -1", p + "13: expected a non-negative integer, found '-1'"},
        {"EVENTS SKIP 1.5", p + "13: expected a non-negative integer, found '1.5'"},
        {"EVENTS TAKE ten", p + "13: expected a non-negative integer, found 'ten'"},
        {"EVENTS TOP 0 BY user", p + "12: expected an integer of at least 1 (TOP N BY field), found '0'"},
        {"EVENTS TOP 5 user", p + "14: expected BY (TOP N BY field), found 'user'"},
        // duplicates and conflicts
        {"EVENTS TAKE 5 TAKE 6", p + "15: expected at most one TAKE clause, found 'TAKE'"},
        {"EVENTS SINCE 1h ago since today", p + "21: expected at most one SINCE clause, found 'since'"},
        {"EVENTS UNTIL today UNTIL today", p + "20: expected at most one UNTIL clause, found 'UNTIL'"},
        {"EVENTS SORT a SORT b", p + "15: expected at most one SORT clause, found 'SORT'"},
        {"EVENTS STREAM STREAM", p + "15: expected at most one STREAM clause, found 'STREAM'"},
        {"EVENTS COUNT DISTINCT user",
         p + "14: expected at most one aggregation (COUNT, COUNT BY, TOP, DISTINCT or GROUP), found 'DISTINCT'"},
        {"EVENTS GROUP a COUNT COUNT BY b",
         p + "22: expected at most one aggregation (COUNT, COUNT BY, TOP, DISTINCT or GROUP), found 'COUNT'"},
        // fields
        {"EVENTS SORT", p + "12: expected a field name, found end of query"},
        {"EVENTS SELECT a,", p + "17: expected a field name, found end of query"},
        {"EVENTS SELECT kacs.*", p + "15: expected a field name, found 'kacs.*'"},
        {"EVENTS COUNT BY", p + "16: expected a field name, found end of query"},
        {"EVENTS DISTINCT 5", p + "17: expected a field name, found '5'"},
        {"EVENTS GROUP user", p + "18: expected ',', COUNT, SUM, AVG, MIN or MAX, found end of query"},
        {"EVENTS GROUP user SUM", p + "22: expected a field name, found end of query"},
        {"EVENTS GROUP BY user COUNT", p + "14: expected a field name (GROUP f1[, f2…] FN, without BY), found 'BY'"},
        // WHERE structure
        {"EVENTS WHERE", p + "13: expected a field name or '(', found end of query"},
        {"EVENTS WHERE a..b == 1", p + "14: expected a field name or '(', found 'a..b'"},
        {"EVENTS WHERE a == 1 OR", p + "23: expected a field name or '(', found end of query"},
        {"EVENTS WHERE user = \"x\"", p + "19: expected " + operators + ", found '='"},
        {"EVENTS WHERE user LIKE \"x%\"", p + "19: expected " + operators + ", found 'LIKE'"},
        {"EVENTS WHERE (a == 1", p + "21: expected AND, OR or ')', found end of query"},
        {"EVENTS WHERE a == 1)", p + "20: expected AND, OR, " + clauses + " or end of query, found ')'"},
        {"EVENTS WHERE a == 1 b == 2", p + "21: expected AND, OR, " + clauses + " or end of query, found 'b'"},
        {"EVENTS WHERE a == 1 && b == 2", p + "21: expected AND, OR, " + clauses + " or end of query, found '&'"},
        {"EVENTS WHERE a IN 1, 2", p + "19: expected '(' starting the list of values, found '1'"},
        {"EVENTS WHERE a IN ()", p + "20: expected a value, found ')'"},
        {"EVENTS WHERE a IN (1 2)", p + "22: expected ',' or ')', found '2'"},
        {"EVENTS WHERE a IS 5", p + "19: expected NULL or NOT NULL, found '5'"},
        {"EVENTS WHERE a IS NOT 5", p + "23: expected NULL, found '5'"},
        {"EVENTS WHERE " + std::string(65, '(') + "a == 1" + std::string(65, ')'),
         p + "78: expected at most 64 nested parentheses, found '('"},
        // values
        {"EVENTS WHERE user ==", p + "21: expected a value, found end of query"},
        {"EVENTS WHERE user == alice", p + "22: expected a value (strings go in quotes), found 'alice'"},
        {"EVENTS WHERE user == null", p + "22: expected a value (test for a missing value with IS NULL), found 'null'"},
        {"EVENTS WHERE a == 99999999999999999999",
         p + "19: expected an integer between -9223372036854775808 and 9223372036854775807, found "
             "'99999999999999999999'"},
        {"EVENTS WHERE a == 12abc", p + "19: expected a value, found '12abc'"},
        {"EVENTS WHERE a == 1.5.2", p + "19: expected a value, found '1.5.2'"},
        {"EVENTS WHERE a == 1e999", p + "19: expected a finite number, found '1e999'"},
        {"EVENTS WHERE a == \"open", p + "24: expected \" to close the string at position 19, found end of query"},
        {"EVENTS WHERE a == 'open", p + "24: expected ' to close the string at position 19, found end of query"},
        {"EVENTS WHERE a == \"bad\\q\"", p + "23: expected an escape sequence (\\\" \\' \\\\ \\n \\t), found '\\q'"},
        {"EVENTS WHERE process_guid == {not-a-guid}",
         p + "30: expected a GUID like {550e8400-e29b-41d4-a716-446655440000}, found '{not-a-guid}'"},
        {"EVENTS WHERE process_guid == {550e8400-e29b-41d4-a716-44665544000",
         p + "30: expected a GUID like {550e8400-e29b-41d4-a716-446655440000}, found "
             "'{550e8400-e29b-41d4-a716-44665544000'"},
        // time literals
        {"EVENTS SINCE", p + "13: expected " + time + ", found end of query"},
        {"EVENTS SINCE tomorrow", p + "14: expected " + time + ", found 'tomorrow'"},
        {"EVENTS SINCE 1w ago", p + "14: expected " + time + ", found '1w'"},
        {"EVENTS SINCE \"2026-11-01\"", p + "14: expected " + time + ", found '\"2026-11-01\"'"},
        {"EVENTS SINCE 1h", p + "16: expected ago or hence, found end of query"},
        {"EVENTS WHERE timestamp > 1d before", p + "29: expected ago or hence, found 'before'"},
        {"EVENTS SINCE 2026-02-30", p + "14: expected " + date + ", found '2026-02-30'"},
        {"EVENTS UNTIL 2026-11-01T25:00:00", p + "14: expected " + date + ", found '2026-11-01T25:00:00'"},
        {"EVENTS WHERE timestamp > 1969-12-31", p + "26: expected " + date + ", found '1969-12-31'"},
        {"EVENTS SINCE 99999999999d ago",
         p + "14: expected a time within the 64-bit nanosecond range (1677 to 2262), found '99999999999d'"},
        // positions count characters, not bytes
        {"EVENTS WHERE ü == 1 TAKE x", p + "26: expected a non-negative integer, found 'x'"},
        // the text must be UTF-8; control characters are shown escaped
        {"EVENTS WHERE a == \"caf\xe9\"", p + "23: expected UTF-8 text, found the byte 0xe9"},
        {"EVENTS WHERE a == \"\xc3\"", p + "20: expected UTF-8 text, found the byte 0xc3"},
        {"EVENTS WHERE a == 1 \x01", p + "21: expected AND, OR, " + clauses + " or end of query, found '\\x01'"},
        // a long token is cut in the message
        {"EVENTS kacs.* " + std::string(60, 'x'),
         p + "15: expected " + clauses + " or end of query, found '" + std::string(40, 'x') + "…'"},
    };
    for (const auto& [query, message] : cases) {
        INFO("query: " << query);
        CHECK(error_of(query) == message);
    }
    CHECK(cases.size() >= 25);
}

TEST_CASE("no error message mentions SQL", "[parser]") {
    for (const char* q : {"EVENTS WHERE a == 1 ORDER BY a", "EVENTS LIMIT 5", "SELECT * FROM events",
                          "EVENTS WHERE a == 1; DROP TABLE events", "EVENTS WHERE a == '1' OR '1'=='1'"}) {
        auto r = parse(q, kNow);
        INFO(q);
        REQUIRE_FALSE(r.ok());
        CHECK_THAT(r.error().message, !Catch::Contains("SQL", Catch::CaseSensitive::No));
    }
}
