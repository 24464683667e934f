// Query text → Query (PSD-008 §8.6.1): mode from the first word, then the optional type
// pattern, then clauses in any order, collected into the AST. Recursive descent over the
// tokens of lexer.hpp; WHERE conditions with AND binding tighter than OR (§8.1).
//
//   query      := EVENTS [pattern] clause* | EVENTS INDEX field | STATUS
//   pattern    := word | string                    (not a clause keyword; STREAM may precede it)
//   clause     := SINCE time | UNTIL time | WHERE or | SELECT fields | SORT key {, key}
//               | SKIP n | TAKE n | COUNT [BY field] | TOP n BY field | DISTINCT field
//               | GROUP fields (COUNT | SUM field | AVG field | MIN field | MAX field) | STREAM
//   or         := and {OR and}          and := primary {AND primary}
//   primary    := '(' or ')' | field op value | field (IN | NOT_IN) '(' value {, value} ')'
//               | field IS [NOT] NULL
//   time       := duration (ago | hence) | today | yesterday | date | integer (ns)
//   value      := string | {guid} | integer | float | true | false | time | origin alias
//
// Semantic checks that need the field's type (a string compared with `>`, a non-GUID compared
// with a GUID column) belong to the planner; this file only knows the syntax.
#include "eventd/query_language/parser.hpp"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <limits>
#include <utility>

#include "eventd/query_language/index_candidates.hpp"
#include "eventd/query_language/lexer.hpp"
#include "eventd/query_language/time_literal.hpp"

namespace eventd::query {

namespace {

constexpr std::string_view kClauses =
    "a clause (SINCE, UNTIL, WHERE, SELECT, SORT, SKIP, TAKE, COUNT, TOP, DISTINCT, GROUP, STREAM)";
constexpr std::string_view kOperators =
    "a comparison operator (==, !=, >, >=, <, <=, STARTS_WITH, ENDS_WITH, CONTAINS, IN, NOT_IN, HAS, IS)";
constexpr std::string_view kTime = "a time (such as 1h ago, today, 2026-11-01 or 2026-11-01T12:00:00)";
constexpr std::string_view kValidDate =
    "a valid UTC date or date-time between 1970-01-01 and 2262-04-11 (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS)";
constexpr std::string_view kOneAggregation = "at most one aggregation (COUNT, COUNT BY, TOP, DISTINCT or GROUP)";
constexpr size_t kMaxNesting = 64;  // parentheses: bounded recursion for hostile input

constexpr std::string_view kClauseKeywords[] = {"SINCE", "UNTIL", "WHERE",    "SELECT", "SORT",   "SKIP", "TAKE",
                                                "COUNT", "TOP",   "DISTINCT", "GROUP",  "STREAM", "INDEX"};

bool is_clause_keyword(const Token& t) {
    for (auto k : kClauseKeywords) {
        if (is_keyword(t, k)) return true;
    }
    return false;
}

// Decimal or 0x hex, optional '-'; nullopt outside int64.
std::optional<int64_t> integer_value(std::string_view text) {
    const bool negative = !text.empty() && text[0] == '-';
    if (negative) text.remove_prefix(1);
    int base = 10;
    if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
        base = 16;
        text.remove_prefix(2);
    }
    uint64_t magnitude = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), magnitude, base);
    if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    if (negative) {
        if (magnitude > kMax + 1) return std::nullopt;
        return magnitude == kMax + 1 ? std::numeric_limits<int64_t>::min() : -static_cast<int64_t>(magnitude);
    }
    if (magnitude > kMax) return std::nullopt;
    return static_cast<int64_t>(magnitude);
}

std::optional<double> float_value(std::string_view text) {
    double v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v)) return std::nullopt;
    return v;
}

// §8.2.3 origin aliases, and `audit` for the audit source's class (docs/AUDIT.md).
std::optional<int64_t> origin_alias(const Token& t) {
    if (is_keyword(t, "USERSPACE")) return 0;
    if (is_keyword(t, "KMES")) return 1;
    if (is_keyword(t, "KACS")) return 2;
    if (is_keyword(t, "LCS")) return 3;
    if (is_keyword(t, "AUDIT")) return 4;  // KMES_ORIGIN_AUDIT: this implementation's allocation (ABI.md)
    return std::nullopt;
}

class Parser {
public:
    Parser(std::vector<Token> tokens, int64_t now_ns) : tokens_(std::move(tokens)), now_ns_(now_ns) {}

    base::Result<Query> run() {
        const Token& first = peek();
        if (first.kind == TokenKind::end) return parse_error(first, "EVENTS or STATUS");
        if (is_keyword(first, "LOGS") || is_keyword(first, "LOG")) {
            return base::Error{EINVAL, "LOGS queries are not supported"};
        }
        if (is_keyword(first, "METRIC") || is_keyword(first, "METRICS")) {
            return base::Error{EINVAL, "METRIC queries are not supported"};
        }
        if (is_keyword(first, "STATUS")) {
            advance();
            if (peek().kind != TokenKind::end) return parse_error(peek(), "end of query (STATUS takes no clauses)");
            query_.mode = Mode::status;
            return std::move(query_);
        }
        // Issue 28: `eventctl verify` without --store. The key is the operator's to give: eventd
        // holds only the sealing half.
        if (is_keyword(first, "VERIFY")) {
            advance();
            if (peek().kind != TokenKind::string) return parse_error(peek(), "the verification key as a string");
            query_.verify_key = advance().value;
            if (peek().kind != TokenKind::end) return parse_error(peek(), "end of query (VERIFY takes no clauses)");
            query_.mode = Mode::verify;
            return std::move(query_);
        }
        if (!is_keyword(first, "EVENTS")) return parse_error(first, "EVENTS or STATUS");
        advance();
        if (auto s = clauses(); !s) return s.error();
        return std::move(query_);
    }

private:
    const Token& peek(size_t ahead = 0) const {
        const size_t i = std::min(next_ + ahead, tokens_.size() - 1);
        return tokens_[i];
    }
    const Token& advance() {
        const Token& t = peek();
        if (next_ < tokens_.size() - 1) ++next_;
        return t;
    }
    bool accept(std::string_view keyword) {
        if (!is_keyword(peek(), keyword)) return false;
        advance();
        return true;
    }

    // ---- clauses (§8.2, any order) ----

    base::Status clauses() {
        bool pattern_allowed = true;  // only STREAM may stand between EVENTS and the pattern
        bool after_where = false;     // for the message: a WHERE may continue with AND/OR
        while (peek().kind != TokenKind::end) {
            const Token& t = peek();
            if (pattern_allowed && !is_clause_keyword(t) &&
                (t.kind == TokenKind::word || t.kind == TokenKind::string)) {
                if (auto s = type_pattern(); !s) return s;
                pattern_allowed = false;
                continue;
            }
            if (!is_clause_keyword(t)) {
                std::string expected = pattern_allowed ? "an event type pattern, " : (after_where ? "AND, OR, " : "");
                return parse_error(t, expected + std::string(kClauses) + " or end of query");
            }
            const bool is_stream = is_keyword(t, "STREAM");
            if (auto s = clause(); !s) return s;
            if (!is_stream) pattern_allowed = false;
            after_where = is_keyword(t, "WHERE");
        }
        return {};
    }

    base::Status type_pattern() {
        const Token& t = advance();
        std::string pattern = t.kind == TokenKind::string ? t.value : t.text;
        if (pattern.empty()) return parse_error(t, "an event type pattern such as kacs.* (not empty)");
        query_.type_pattern = std::move(pattern);
        return {};
    }

    base::Status clause() {
        const Token& keyword = advance();
        if (is_keyword(keyword, "STREAM")) {
            if (query_.stream) return duplicate(keyword);
            query_.stream = true;
            return {};
        }
        if (is_keyword(keyword, "SINCE")) return time_bound(keyword, query_.since_ns);
        if (is_keyword(keyword, "UNTIL")) return time_bound(keyword, query_.until_ns);
        if (is_keyword(keyword, "WHERE")) return where();
        if (is_keyword(keyword, "SELECT")) return select();
        if (is_keyword(keyword, "SORT")) return sort(keyword);
        if (is_keyword(keyword, "SKIP")) return count_limit(keyword, query_.skip);
        if (is_keyword(keyword, "TAKE")) return count_limit(keyword, query_.take);
        if (is_keyword(keyword, "INDEX")) return index_command();
        // The rest are aggregations: one per query.
        if (query_.aggregation.kind != Aggregation::Kind::none) return parse_error(keyword, kOneAggregation);
        if (is_keyword(keyword, "COUNT")) return count();
        if (is_keyword(keyword, "TOP")) return top();
        if (is_keyword(keyword, "DISTINCT")) return distinct();
        return group();
    }

    // §8.2.7: `EVENTS INDEX <field>`, alone — an administrative command, not a filter.
    base::Status index_command() {
        constexpr std::string_view kAlone = "INDEX stands alone: EVENTS INDEX <field>, without other clauses";
        if (next_ != 2) return base::Error{EINVAL, std::string(kAlone)};  // not right after EVENTS
        auto f = field("a field to index (a header column such as event_type, or a payload path such as user)");
        if (!f) return f.error();
        if (auto problem = candidate_problem(f->name))
            return base::Error{EINVAL, "INDEX " + f->name + ": " + *problem};
        if (peek().kind != TokenKind::end) return parse_error(peek(), "end of query (" + std::string(kAlone) + ")");
        query_.mode = Mode::index;
        query_.index_field = std::move(f.value());
        return {};
    }

    base::Error duplicate(const Token& keyword) {
        std::string name = keyword.text;
        for (char& c : name) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
        return parse_error(keyword, "at most one " + name + " clause");
    }

    base::Status time_bound(const Token& keyword, std::optional<int64_t>& slot) {
        if (slot) return duplicate(keyword);
        auto t = time(kTime);
        if (!t) return t.error();
        slot = *t;
        return {};
    }

    base::Status count_limit(const Token& keyword, std::optional<uint64_t>& slot) {
        if (slot) return duplicate(keyword);
        const Token& t = peek();
        std::optional<int64_t> n;
        if (t.kind == TokenKind::integer) n = integer_value(t.text);
        if (!n || *n < 0) return parse_error(t, "a non-negative integer");
        advance();
        slot = static_cast<uint64_t>(*n);
        return {};
    }

    base::Status select() {
        do {
            auto f = field();
            if (!f) return f.error();
            bool seen = false;
            for (const auto& existing : query_.select) seen = seen || existing.name == f->name;
            if (!seen) query_.select.push_back(std::move(f.value()));
        } while (accept_comma());
        return {};
    }

    base::Status sort(const Token& keyword) {
        if (!query_.sort.empty()) return duplicate(keyword);
        do {
            auto f = field();
            if (!f) return f.error();
            SortKey key{std::move(f.value()), false};
            if (accept("DESC")) {
                key.descending = true;
            } else {
                accept("ASC");
            }
            query_.sort.push_back(std::move(key));
        } while (accept_comma());
        return {};
    }

    base::Status count() {
        if (!accept("BY")) {
            query_.aggregation.kind = Aggregation::Kind::count;
            return {};
        }
        auto f = field();
        if (!f) return f.error();
        query_.aggregation.kind = Aggregation::Kind::count_by;
        query_.aggregation.fields.push_back(std::move(f.value()));
        return {};
    }

    base::Status top() {
        const Token& t = peek();
        std::optional<int64_t> n;
        if (t.kind == TokenKind::integer) n = integer_value(t.text);
        if (!n || *n < 1) return parse_error(t, "an integer of at least 1 (TOP N BY field)");
        advance();
        if (!accept("BY")) return parse_error(peek(), "BY (TOP N BY field)");
        auto f = field();
        if (!f) return f.error();
        query_.aggregation.kind = Aggregation::Kind::top_by;
        query_.aggregation.top_n = static_cast<uint64_t>(*n);
        query_.aggregation.fields.push_back(std::move(f.value()));
        return {};
    }

    base::Status distinct() {
        auto f = field();
        if (!f) return f.error();
        query_.aggregation.kind = Aggregation::Kind::distinct;
        query_.aggregation.fields.push_back(std::move(f.value()));
        return {};
    }

    base::Status group() {
        Aggregation agg;
        agg.kind = Aggregation::Kind::group;
        do {
            if (is_keyword(peek(), "BY")) return parse_error(peek(), "a field name (GROUP f1[, f2…] FN, without BY)");
            auto f = field();
            if (!f) return f.error();
            agg.fields.push_back(std::move(f.value()));
        } while (accept_comma());
        const Token& fn = peek();
        if (is_keyword(fn, "COUNT")) {
            agg.fn = AggregateFn::count;
        } else if (is_keyword(fn, "SUM")) {
            agg.fn = AggregateFn::sum;
        } else if (is_keyword(fn, "AVG")) {
            agg.fn = AggregateFn::avg;
        } else if (is_keyword(fn, "MIN")) {
            agg.fn = AggregateFn::min;
        } else if (is_keyword(fn, "MAX")) {
            agg.fn = AggregateFn::max;
        } else {
            return parse_error(fn, "',', COUNT, SUM, AVG, MIN or MAX");
        }
        advance();
        if (agg.fn != AggregateFn::count) {
            auto f = field();
            if (!f) return f.error();
            agg.fn_field = std::move(f.value());
        }
        query_.aggregation = std::move(agg);
        return {};
    }

    bool accept_comma() {
        if (peek().kind != TokenKind::comma) return false;
        advance();
        return true;
    }

    // A header column or a dotted payload path (§8.1 field resolution).
    base::Result<FieldRef> field(std::string_view expected = "a field name") {
        const Token& t = peek();
        bool ok = t.kind == TokenKind::word && t.text.find('*') == std::string::npos && t.text.front() != '.' &&
                  t.text.back() != '.' && t.text.find("..") == std::string::npos;
        if (!ok) return parse_error(t, expected);
        advance();
        FieldRef f;
        f.name = t.text;
        f.position = t.position;
        f.header = header_field(t.text);
        if (!f.header) {
            size_t start = 0;
            while (true) {
                const size_t dot = t.text.find('.', start);
                f.path.push_back(t.text.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
                if (dot == std::string::npos) break;
                start = dot + 1;
            }
        }
        return f;
    }

    // ---- WHERE (§8.1) ----

    base::Status where() {
        auto c = any_of(0);
        if (!c) return c.error();
        query_.where.push_back(std::move(c.value()));
        return {};
    }

    base::Result<Condition> any_of(size_t depth) {
        auto first = all_of(depth);
        if (!first) return first;
        if (!is_keyword(peek(), "OR")) return first;
        Condition node;
        node.kind = Condition::Kind::any_of;
        node.children.push_back(std::move(first.value()));
        while (accept("OR")) {
            auto next = all_of(depth);
            if (!next) return next;
            node.children.push_back(std::move(next.value()));
        }
        return node;
    }

    base::Result<Condition> all_of(size_t depth) {
        auto first = primary(depth);
        if (!first) return first;
        if (!is_keyword(peek(), "AND")) return first;
        Condition node;
        node.kind = Condition::Kind::all_of;
        node.children.push_back(std::move(first.value()));
        while (accept("AND")) {
            auto next = primary(depth);
            if (!next) return next;
            node.children.push_back(std::move(next.value()));
        }
        return node;
    }

    base::Result<Condition> primary(size_t depth) {
        if (peek().kind == TokenKind::lparen) {
            if (depth == kMaxNesting) {
                return parse_error(peek(), "at most " + std::to_string(kMaxNesting) + " nested parentheses");
            }
            advance();
            auto inner = any_of(depth + 1);
            if (!inner) return inner;
            if (peek().kind != TokenKind::rparen) return parse_error(peek(), "AND, OR or ')'");
            advance();
            return inner;
        }
        if (is_cross_type()) return base::Error{EINVAL, "cross-type filters are not supported"};
        Condition node;
        node.kind = Condition::Kind::compare;
        auto f = field("a field name or '('");
        if (!f) return f.error();
        node.comparison.field = std::move(f.value());
        if (auto s = comparison(node.comparison); !s) return s.error();
        return node;
    }

    // `WHERE METRIC …`, `WHERE EVENT … EXISTS`, `WHERE LOG …` (§8.1, out of scope). A payload
    // field that happens to be called "event" is still usable: it is followed by an operator.
    bool is_cross_type() const {
        const Token& t = peek();
        const bool word = is_keyword(t, "METRIC") || is_keyword(t, "METRICS") || is_keyword(t, "EVENT") ||
                          is_keyword(t, "EVENTS") || is_keyword(t, "LOG") || is_keyword(t, "LOGS");
        return word && !is_operator(peek(1));
    }

    static bool is_operator(const Token& t) {
        return t.kind == TokenKind::op || is_keyword(t, "STARTS_WITH") || is_keyword(t, "ENDS_WITH") ||
               is_keyword(t, "CONTAINS") || is_keyword(t, "IN") || is_keyword(t, "NOT_IN") || is_keyword(t, "HAS") ||
               is_keyword(t, "IS");
    }

    base::Status comparison(Comparison& c) {
        const Token& op = peek();
        if (op.kind == TokenKind::op) {
            if (op.text == "==")
                c.op = CompareOp::eq;
            else if (op.text == "!=")
                c.op = CompareOp::ne;
            else if (op.text == ">")
                c.op = CompareOp::gt;
            else if (op.text == ">=")
                c.op = CompareOp::ge;
            else if (op.text == "<")
                c.op = CompareOp::lt;
            else
                c.op = CompareOp::le;
        } else if (is_keyword(op, "STARTS_WITH")) {
            c.op = CompareOp::starts_with;
        } else if (is_keyword(op, "ENDS_WITH")) {
            c.op = CompareOp::ends_with;
        } else if (is_keyword(op, "CONTAINS")) {
            c.op = CompareOp::contains;
        } else if (is_keyword(op, "HAS")) {
            c.op = CompareOp::has;
        } else if (is_keyword(op, "IN") || is_keyword(op, "NOT_IN")) {
            c.op = is_keyword(op, "IN") ? CompareOp::in : CompareOp::not_in;
            advance();
            return value_list(c);
        } else if (is_keyword(op, "IS")) {
            advance();
            c.op = accept("NOT") ? CompareOp::is_not_null : CompareOp::is_null;
            if (!accept("NULL")) return parse_error(peek(), c.op == CompareOp::is_null ? "NULL or NOT NULL" : "NULL");
            return {};
        } else {
            return parse_error(op, kOperators);
        }
        advance();
        auto v = value();
        if (!v) return v.error();
        c.values.push_back(std::move(v.value()));
        return {};
    }

    base::Status value_list(Comparison& c) {
        if (peek().kind != TokenKind::lparen) return parse_error(peek(), "'(' starting the list of values");
        advance();
        do {
            auto v = value();
            if (!v) return v.error();
            c.values.push_back(std::move(v.value()));
        } while (accept_comma());
        if (peek().kind != TokenKind::rparen) return parse_error(peek(), "',' or ')'");
        advance();
        return {};
    }

    base::Result<Literal> value() {
        const Token& t = peek();
        switch (t.kind) {
            case TokenKind::string:
            case TokenKind::guid:  // a GUID stays text; the field it meets decides (ast.hpp)
                advance();
                return Literal{t.value};
            case TokenKind::integer: {
                auto n = integer_value(t.text);
                if (!n) return parse_error(t, "an integer between -9223372036854775808 and 9223372036854775807");
                advance();
                return Literal{*n};
            }
            case TokenKind::floating: {
                auto d = float_value(t.text);
                if (!d) return parse_error(t, "a finite number");
                advance();
                return Literal{*d};
            }
            case TokenKind::duration:
            case TokenKind::date: {
                auto ns = time(kTime);
                if (!ns) return ns.error();
                return Literal{TimeLiteral{*ns}};
            }
            case TokenKind::word:
                if (is_keyword(t, "TRUE") || is_keyword(t, "FALSE")) {
                    advance();
                    return Literal{is_keyword(t, "TRUE")};
                }
                if (is_keyword(t, "TODAY") || is_keyword(t, "YESTERDAY")) {
                    auto ns = time(kTime);
                    if (!ns) return ns.error();
                    return Literal{TimeLiteral{*ns}};
                }
                if (auto origin = origin_alias(t)) {
                    advance();
                    return Literal{*origin};
                }
                if (is_keyword(t, "NULL")) return parse_error(t, "a value (test for a missing value with IS NULL)");
                return parse_error(t, "a value (strings go in quotes)");
            default:
                return parse_error(t, "a value");
        }
    }

    // ---- time literals (§8.1) ----

    base::Result<int64_t> time(std::string_view expected) {
        const Token& t = peek();
        if (t.kind == TokenKind::duration) {
            advance();
            const Token& direction = peek();
            const bool ago = is_keyword(direction, "AGO");
            if (!ago && !is_keyword(direction, "HENCE")) return parse_error(direction, "ago or hence");
            advance();
            auto d = duration_ns(t.text);
            std::optional<int64_t> ns = d ? relative_ns(now_ns_, *d, ago) : std::nullopt;
            if (!ns) return parse_error(t, "a time within the 64-bit nanosecond range (1677 to 2262)");
            return *ns;
        }
        if (t.kind == TokenKind::date) {
            auto ns = date_ns(t.text);
            if (!ns) return parse_error(t, kValidDate);
            advance();
            return *ns;
        }
        if (is_keyword(t, "TODAY") || is_keyword(t, "YESTERDAY")) {
            advance();
            return midnight_ns(now_ns_, is_keyword(t, "TODAY") ? 0 : 1);
        }
        if (t.kind == TokenKind::integer) {  // nanoseconds since the epoch
            auto n = integer_value(t.text);
            if (!n) return parse_error(t, "an integer between -9223372036854775808 and 9223372036854775807");
            advance();
            return *n;
        }
        return parse_error(t, expected);
    }

    std::vector<Token> tokens_;
    size_t next_ = 0;
    int64_t now_ns_;
    Query query_;
};

}  // namespace

base::Result<Query> parse(std::string_view text, int64_t now_ns) {
    auto tokens = tokenize(text);
    if (!tokens) return tokens.error();
    return Parser(std::move(tokens.value()), now_ns).run();
}

}  // namespace eventd::query
