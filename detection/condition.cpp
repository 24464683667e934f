// Sigma conditions: a tokenizer and a recursive-descent parser of the grammar in condition.hpp.
#include "detection/condition.hpp"

#include <cctype>

namespace eventd::detection {
namespace {

using base::Error;
using base::ErrorCode;

struct Token {
    enum class Kind { word, open, close, pipe, end };
    Kind kind;
    std::string text;
    size_t at;  // byte offset in the condition, for errors
};

base::Result<std::vector<Token>> tokenize(std::string_view text) {
    std::vector<Token> out;
    size_t i = 0;
    while (i < text.size()) {
        const char c = text[i];
        if (std::isspace(static_cast<unsigned char>(c))) {
            ++i;
        } else if (c == '(' || c == ')' || c == '|') {
            out.push_back({c == '('   ? Token::Kind::open
                           : c == ')' ? Token::Kind::close
                                      : Token::Kind::pipe,
                           std::string(1, c), i});
            ++i;
        } else {
            const size_t start = i;
            while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i])) && text[i] != '(' &&
                   text[i] != ')' && text[i] != '|')
                ++i;
            out.push_back({Token::Kind::word, std::string(text.substr(start, i - start)), start});
        }
    }
    out.push_back({Token::Kind::end, "", text.size()});
    return out;
}

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// `pattern` with "*" matching any run of characters (identifiers are matched exactly otherwise).
bool matches_pattern(std::string_view pattern, std::string_view name) {
    if (pattern.empty()) return name.empty();
    if (pattern[0] == '*') {
        for (size_t skip = 0; skip <= name.size(); ++skip)
            if (matches_pattern(pattern.substr(1), name.substr(skip))) return true;
        return false;
    }
    return !name.empty() && pattern[0] == name[0] && matches_pattern(pattern.substr(1), name.substr(1));
}

class Parser {
public:
    Parser(std::vector<Token> tokens, const std::set<std::string>& identifiers)
        : tokens_(std::move(tokens)), identifiers_(identifiers) {}

    base::Result<std::unique_ptr<Condition>> parse() {
        auto e = parse_or();
        if (!e) return e;
        if (peek().kind == Token::Kind::pipe)
            return fail(ErrorCode::not_supported, "aggregations (\"| count() …\") are not supported");
        if (peek().kind != Token::Kind::end) return fail(ErrorCode::invalid, "unexpected '" + peek().text + "'");
        return e;
    }

private:
    const Token& peek() const { return tokens_[pos_]; }
    const Token& next() { return tokens_[pos_ < tokens_.size() - 1 ? pos_++ : pos_]; }
    bool peek_keyword(const char* keyword) const {
        return peek().kind == Token::Kind::word && lower(peek().text) == keyword;
    }
    Error fail(ErrorCode code, const std::string& what) const {
        return Error{code, "condition: " + what + " at character " + std::to_string(peek().at + 1)};
    }

    using Node = base::Result<std::unique_ptr<Condition>>;

    Node combine(Condition::Kind kind, Node (Parser::*operand)(), const char* keyword) {
        auto first = (this->*operand)();
        if (!first || !peek_keyword(keyword)) return first;
        auto node = std::make_unique<Condition>();
        node->kind = kind;
        node->operands.push_back(std::move(*first));
        while (peek_keyword(keyword)) {
            next();
            auto more = (this->*operand)();
            if (!more) return more;
            node->operands.push_back(std::move(*more));
        }
        return node;
    }
    Node parse_or() { return combine(Condition::Kind::or_, &Parser::parse_and, "or"); }
    Node parse_and() { return combine(Condition::Kind::and_, &Parser::parse_not, "and"); }

    Node parse_not() {
        if (!peek_keyword("not")) return parse_primary();
        next();
        auto operand = parse_not();
        if (!operand) return operand;
        auto node = std::make_unique<Condition>();
        node->kind = Condition::Kind::not_;
        node->operands.push_back(std::move(*operand));
        return node;
    }

    Node parse_primary() {
        const Token& t = peek();
        if (t.kind == Token::Kind::open) {
            next();
            auto inner = parse_or();
            if (!inner) return inner;
            if (peek().kind != Token::Kind::close) return fail(ErrorCode::invalid, "')' expected");
            next();
            return inner;
        }
        if (t.kind != Token::Kind::word) return fail(ErrorCode::invalid, "a search identifier expected");
        const std::string word = lower(t.text);
        if (word == "and" || word == "or" || word == "not" || word == "of" || word == "them")
            return fail(ErrorCode::invalid, "a search identifier expected, not '" + t.text + "'");
        if (word == "near") return fail(ErrorCode::not_supported, "'near' is not supported");
        // A quantifier: "1 of", "any of", "all of".
        if ((word == "1" || word == "any" || word == "all") && tokens_[pos_ + 1].kind == Token::Kind::word &&
            lower(tokens_[pos_ + 1].text) == "of")
            return parse_quantifier(word == "all");
        if (word == "1" || word == "all" || word == "any")
            return fail(ErrorCode::invalid, "'of' expected after '" + t.text + "'");
        if (std::isdigit(static_cast<unsigned char>(word[0])) && tokens_[pos_ + 1].kind == Token::Kind::word &&
            lower(tokens_[pos_ + 1].text) == "of")
            return fail(ErrorCode::not_supported, "'" + t.text + " of' is not supported (only 1 of and all of)");
        if (!identifiers_.count(t.text))
            return fail(ErrorCode::invalid, "'" + t.text + "' is no search identifier of the detection");
        auto node = std::make_unique<Condition>();
        node->name = t.text;
        next();
        return node;
    }

    Node parse_quantifier(bool all) {
        next();  // 1 / any / all
        next();  // of
        const Token& target = peek();
        if (target.kind != Token::Kind::word)
            return fail(ErrorCode::invalid, "an identifier pattern or 'them' expected");
        auto node = std::make_unique<Condition>();
        node->kind = all ? Condition::Kind::all_of : Condition::Kind::any_of;
        const bool them = lower(target.text) == "them";
        for (const std::string& id : identifiers_) {
            if (them ? id.rfind('_', 0) != 0 : matches_pattern(target.text, id)) node->names.push_back(id);
        }
        if (node->names.empty())
            return fail(ErrorCode::invalid, "'" + target.text + "' matches no search identifier of the detection");
        next();
        return node;
    }

    std::vector<Token> tokens_;
    size_t pos_ = 0;
    const std::set<std::string>& identifiers_;
};

void collect(const Condition& c, std::set<std::string>& out) {
    if (c.kind == Condition::Kind::identifier) out.insert(c.name);
    out.insert(c.names.begin(), c.names.end());
    for (const auto& o : c.operands) collect(*o, out);
}

}  // namespace

base::Result<std::unique_ptr<Condition>> parse_condition(std::string_view text,
                                                         const std::set<std::string>& identifiers) {
    auto tokens = tokenize(text);
    if (!tokens) return tokens.error();
    if (tokens->size() == 1) return Error{ErrorCode::invalid, "condition: empty"};
    for (const Token& t : *tokens)
        if (t.kind == Token::Kind::pipe)
            return Error{ErrorCode::not_supported, "condition: aggregations (\"| count() …\") are not supported"};
    return Parser(std::move(*tokens), identifiers).parse();
}

std::set<std::string> identifiers_of(const Condition& condition) {
    std::set<std::string> out;
    collect(condition, out);
    return out;
}

}  // namespace eventd::detection
