// Sigma values as string matchers; see value_pattern.hpp.
#include "detection/value_pattern.hpp"

#include <re2/re2.h>

#include <cctype>

namespace eventd::detection {
namespace {

// ASCII only, as Sigma's case-insensitivity (and no locale lookup per character: 6 % of the
// evaluation in PERFORMANCE.md §18's profile was tolower).
char fold(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

}  // namespace

ValuePattern ValuePattern::glob(std::string_view value, Anchor anchor, bool cased) {
    ValuePattern p;
    p.source_ = std::string(value);
    p.cased_ = cased;
    auto run = [&] {
        if (p.tokens_.empty() || p.tokens_.back().kind != Token::Kind::any_run)
            p.tokens_.push_back({Token::Kind::any_run});
    };
    if (anchor == Anchor::contains || anchor == Anchor::ends_with) run();
    for (size_t i = 0; i < value.size(); ++i) {
        const char c = value[i];
        // Sigma's escapes: \* and \? are the characters, \\ a backslash; a backslash before
        // anything else is itself (so Windows-style paths need no doubling).
        if (c == '\\' && i + 1 < value.size() && (value[i + 1] == '*' || value[i + 1] == '?' || value[i + 1] == '\\')) {
            const char escaped = value[++i];
            p.tokens_.push_back({Token::Kind::character, cased ? escaped : fold(escaped)});
        } else if (c == '*') {
            run();
        } else if (c == '?') {
            p.tokens_.push_back({Token::Kind::any_char});
        } else {
            p.tokens_.push_back({Token::Kind::character, cased ? c : fold(c)});
        }
    }
    if (anchor == Anchor::contains || anchor == Anchor::starts_with) run();
    return p;
}

ValuePattern ValuePattern::literal(std::string_view value, Anchor anchor, bool cased) {
    std::string escaped;
    for (char c : value) {
        if (c == '*' || c == '?' || c == '\\') escaped += '\\';
        escaped += c;
    }
    ValuePattern p = glob(escaped, anchor, cased);
    p.source_ = std::string(value);
    return p;
}

base::Result<ValuePattern> ValuePattern::regex(std::string_view expression, std::string_view flags) {
    RE2::Options options;
    options.set_log_errors(false);
    // Sigma's sub-modifiers as RE2's own flags: i case-insensitive, m ^ and $ at lines, s . at
    // newlines too.
    std::string prefix;
    for (char f : flags)
        if ((f == 'i' || f == 'm' || f == 's') && prefix.find(f) == std::string::npos) prefix += f;
    const std::string pattern =
        prefix.empty() ? std::string(expression) : "(?" + prefix + ")" + std::string(expression);
    auto compiled = std::make_shared<const RE2>(pattern, options);
    if (!compiled->ok())
        return base::Error{base::ErrorCode::invalid, "re value '" + std::string(expression) +
                                                         "' is not an expression RE2 accepts: " + compiled->error()};
    ValuePattern p;
    p.source_ = std::string(expression);
    p.regex_ = std::move(compiled);
    return p;
}

bool ValuePattern::matches(std::string_view text) const {
    if (regex_) return RE2::PartialMatch(re2::StringPiece(text.data(), text.size()), *regex_);
    return glob_matches(text);
}

// The classic wildcard match: on a mismatch, back to just after the last `*`, which takes one
// more character. Time O(text × pattern) at worst — never exponential, whatever the `*`s.
bool ValuePattern::glob_matches(std::string_view text) const {
    size_t p = 0, t = 0;
    size_t star = std::string::npos, star_text = 0;
    while (t < text.size()) {
        const char c = cased_ ? text[t] : fold(text[t]);
        if (p < tokens_.size() && (tokens_[p].kind == Token::Kind::any_char ||
                                   (tokens_[p].kind == Token::Kind::character && tokens_[p].c == c))) {
            ++p;
            ++t;
        } else if (p < tokens_.size() && tokens_[p].kind == Token::Kind::any_run) {
            star = p++;
            star_text = t;
        } else if (star != std::string::npos) {
            p = star + 1;
            t = ++star_text;
        } else {
            return false;
        }
    }
    while (p < tokens_.size() && tokens_[p].kind == Token::Kind::any_run) ++p;
    return p == tokens_.size();
}

}  // namespace eventd::detection
