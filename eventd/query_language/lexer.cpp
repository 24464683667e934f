// Query text → tokens (PSD-008 §8.1). See lexer.hpp for the token shapes.
#include "eventd/query_language/lexer.hpp"

#include "base/guid_text.hpp"
#include "eventd/query_language/ascii.hpp"

#include <cerrno>
#include <cstdio>

#include "eventd/query_language/time_literal.hpp"
#include "kmes/guid.hpp"

namespace eventd::query {

namespace {

constexpr size_t kMaxQuotedChars = 40;  // error messages quote at most this much of a token

bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_non_ascii(char c) { return static_cast<unsigned char>(c) >= 0x80; }
bool is_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// Words carry field names (payload keys may be any UTF-8), event type patterns (`*`) and
// dotted paths. `?`, `[` and `]` are literal characters of a type pattern (§8.2.2: `*` is the
// only wildcard), so they may continue a word: `EVENTS app.logi?` needs no quotes.
bool starts_word(char c) { return is_alpha(c) || c == '_' || c == '*' || is_non_ascii(c); }
bool continues_word(char c) { return starts_word(c) || is_digit(c) || c == '.' || c == '?' || c == '[' || c == ']'; }

char ascii_upper(char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c; }

bool all_of(std::string_view s, bool (*pred)(char)) {
    if (s.empty()) return false;
    for (char c : s) {
        if (!pred(c)) return false;
    }
    return true;
}

// digits '.' digits [e[+-]digits]  |  digits e[+-]digits
bool is_float_shape(std::string_view s) {
    size_t i = 0;
    while (i < s.size() && is_digit(s[i])) ++i;
    if (i == 0) return false;
    bool fraction = false;
    if (i < s.size() && s[i] == '.') {
        const size_t start = ++i;
        while (i < s.size() && is_digit(s[i])) ++i;
        if (i == start) return false;
        fraction = true;
    }
    bool exponent = false;
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
        ++i;
        if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
        const size_t start = i;
        while (i < s.size() && is_digit(s[i])) ++i;
        if (i == start) return false;
        exponent = true;
    }
    return i == s.size() && (fraction || exponent);
}

TokenKind classify_number(std::string_view run) {
    const bool negative = run[0] == '-';
    const std::string_view body = negative ? run.substr(1) : run;
    if (all_of(body, is_digit)) return TokenKind::integer;
    if (body.size() > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X') && all_of(body.substr(2), is_hex)) {
        return TokenKind::integer;
    }
    if (is_float_shape(body)) return TokenKind::floating;
    if (!negative && is_duration_shape(body)) return TokenKind::duration;
    if (!negative && is_date_shape(body)) return TokenKind::date;
    return TokenKind::invalid;
}

class Lexer {
public:
    explicit Lexer(std::string_view text) : text_(text), char_pos_(text.size() + 1) {
        size_t chars = 0;
        for (size_t i = 0; i < text.size(); ++i) {
            char_pos_[i] = chars + 1;
            if (!is_continuation(text[i])) ++chars;
        }
        char_pos_[text.size()] = chars + 1;
    }

    base::Result<std::vector<Token>> run() {
        // Positions count characters, and error messages quote the text: both need UTF-8.
        if (auto bad = first_invalid_utf8(); bad < text_.size()) {
            char byte[8];
            std::snprintf(byte, sizeof byte, "0x%02x", static_cast<unsigned char>(text_[bad]));
            return parse_error(char_pos_[bad], "UTF-8 text", std::string("the byte ") + byte);
        }
        std::vector<Token> out;
        size_t i = 0;
        while (true) {
            while (i < text_.size() && is_space(text_[i])) ++i;
            if (i == text_.size()) break;
            auto next = one(i);
            if (!next.ok()) return next.error();
            i += next->text.size();
            out.push_back(std::move(next.value()));
        }
        out.push_back(Token{TokenKind::end, "", "", char_pos_[text_.size()]});
        return out;
    }

private:
    Token make(TokenKind kind, size_t begin, size_t end) const {
        return Token{kind, std::string(text_.substr(begin, end - begin)), "", char_pos_[begin]};
    }

    base::Result<Token> one(size_t i) const {
        const char c = text_[i];
        const char next = i + 1 < text_.size() ? text_[i + 1] : '\0';
        if (is_digit(c) || (c == '-' && is_digit(next))) return number(i);
        if (starts_word(c)) {
            size_t j = i + 1;
            while (j < text_.size() && continues_word(text_[j])) ++j;
            return make(TokenKind::word, i, j);
        }
        if (c == '"' || c == '\'') return string(i);
        if (c == '{') return guid(i);
        switch (c) {
            case '(':
                return make(TokenKind::lparen, i, i + 1);
            case ')':
                return make(TokenKind::rparen, i, i + 1);
            case ',':
                return make(TokenKind::comma, i, i + 1);
            case '=':
            case '!':
                if (next == '=') return make(TokenKind::op, i, i + 2);
                return make(TokenKind::invalid, i, i + 1);
            case '<':
            case '>':
                return make(TokenKind::op, i, next == '=' ? i + 2 : i + 1);
            default:
                break;
        }
        size_t j = i + 1;  // one whole UTF-8 character
        while (j < text_.size() && is_continuation(text_[j])) ++j;
        return make(TokenKind::invalid, i, j);
    }

    // A run of characters that can belong to a number, a duration or a date; a '-' or '+'
    // continues it only after a letter or digit (dates, exponents), so `IN (1,-2)` still splits.
    Token number(size_t i) const {
        size_t j = i + 1;
        while (j < text_.size()) {
            const char c = text_[j];
            const char prev = text_[j - 1];
            if (is_alpha(c) || is_digit(c) || c == '.' || c == ':' || c == '_') {
                ++j;
            } else if ((c == '-' || c == '+') && (is_alpha(prev) || is_digit(prev))) {
                ++j;
            } else {
                break;
            }
        }
        Token t = make(TokenKind::word, i, j);
        t.kind = classify_number(t.text);
        return t;
    }

    base::Result<Token> string(size_t i) const {
        const char quote = text_[i];
        std::string value;
        size_t j = i + 1;
        while (j < text_.size() && text_[j] != quote) {
            if (text_[j] != '\\') {
                value.push_back(text_[j++]);
                continue;
            }
            if (j + 1 == text_.size()) break;  // reported as unterminated below
            switch (text_[j + 1]) {
                case '"':
                    value.push_back('"');
                    break;
                case '\'':
                    value.push_back('\'');
                    break;
                case '\\':
                    value.push_back('\\');
                    break;
                case 'n':
                    value.push_back('\n');
                    break;
                case 't':
                    value.push_back('\t');
                    break;
                default: {
                    size_t end = j + 2;
                    while (end < text_.size() && is_continuation(text_[end])) ++end;
                    return parse_error(char_pos_[j], "an escape sequence (\\\" \\' \\\\ \\n \\t)",
                                       "'" + std::string(text_.substr(j, end - j)) + "'");
                }
            }
            j += 2;
        }
        if (j >= text_.size()) {
            return parse_error(
                char_pos_[text_.size()],
                std::string(1, quote) + " to close the string at position " + std::to_string(char_pos_[i]),
                "end of query");
        }
        Token t = make(TokenKind::string, i, j + 1);
        t.value = std::move(value);
        return t;
    }

    base::Result<Token> guid(size_t i) const {
        size_t j = i + 1;
        while (j < text_.size() && text_[j] != '}' && j - i <= 37) ++j;
        const bool closed = j < text_.size() && text_[j] == '}';
        const std::string_view inner = text_.substr(i + 1, j - i - 1);
        if (!closed || !base::parse_guid(inner)) {
            Token bad = make(TokenKind::invalid, i, closed ? j + 1 : j);
            return parse_error(bad, "a GUID like {550e8400-e29b-41d4-a716-446655440000}");
        }
        Token t = make(TokenKind::guid, i, j + 1);
        t.value = std::string(inner);
        return t;
    }

    // Byte offset of the first byte that does not belong to a well-formed UTF-8 sequence
    // (overlong forms, surrogates and values above U+10FFFF included); size() when none.
    size_t first_invalid_utf8() const {
        size_t i = 0;
        while (i < text_.size()) {
            const auto b = static_cast<unsigned char>(text_[i]);
            size_t len = 0;
            unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
            if (b < 0x80) {
                len = 1;
            } else if (b >= 0xC2 && b <= 0xDF) {
                len = 2;
            } else if (b >= 0xE0 && b <= 0xEF) {
                len = 3;
                if (b == 0xE0) lo = 0xA0;
                if (b == 0xED) hi = 0x9F;
            } else if (b >= 0xF0 && b <= 0xF4) {
                len = 4;
                if (b == 0xF0) lo = 0x90;
                if (b == 0xF4) hi = 0x8F;
            } else {
                return i;
            }
            if (i + len > text_.size()) return i;
            for (size_t k = 1; k < len; ++k) {
                const auto c = static_cast<unsigned char>(text_[i + k]);
                if (k == 1 ? (c < lo || c > hi) : !is_continuation(text_[i + k])) return i;
            }
            i += len;
        }
        return i;
    }

    std::string_view text_;
    std::vector<size_t> char_pos_;  // byte offset → 1-based character position
};

}  // namespace

base::Result<std::vector<Token>> tokenize(std::string_view text) { return Lexer(text).run(); }

bool is_keyword(const Token& token, std::string_view keyword) {
    if (token.kind != TokenKind::word || token.text.size() != keyword.size()) return false;
    for (size_t i = 0; i < keyword.size(); ++i) {
        if (ascii_upper(token.text[i]) != keyword[i]) return false;
    }
    return true;
}

std::string describe(const Token& token) {
    if (token.kind == TokenKind::end) return "end of query";
    // Cut long tokens at a character boundary so one bad literal cannot flood the message;
    // control characters are shown as \xNN so the message stays one printable line.
    std::string out = "'";
    size_t chars = 0;
    for (char c : token.text) {
        if (!is_continuation(c) && chars++ == kMaxQuotedChars) return out + "…'";
        const auto b = static_cast<unsigned char>(c);
        if (b < 0x20 || b == 0x7F) {
            char escaped[8];
            std::snprintf(escaped, sizeof escaped, "\\x%02x", b);
            out += escaped;
        } else {
            out += c;
        }
    }
    return out + "'";
}

base::Error parse_error(size_t position, std::string_view expected, std::string_view found) {
    return base::Error{EINVAL, "parse error at position " + std::to_string(position) + ": expected " +
                                   std::string(expected) + ", found " + std::string(found)};
}

base::Error parse_error(const Token& found, std::string_view expected) {
    return parse_error(found.position, expected, describe(found));
}

}  // namespace eventd::query
