// Tokens of the query language (PSD-008 §8.1). The lexer only cuts the text into tokens and
// remembers where each one started; what a word means (keyword, field, type pattern, alias)
// depends on where it stands, so the parser decides. Characters that cannot start any token
// become `invalid` tokens, so the parser can say what it expected instead.
//
//   word      letters, digits, _ . * (not starting with a digit or '.'):  EVENTS  kacs.*  source.name
//   string    "…" or '…' with the escapes \" \' \\ \n \t                 "alice"  'it\'s'
//   integer   decimal or 0x hex, optional leading '-'                     42  -7  0x1F01FF
//   floating  digits.digits, optional exponent, optional '-'              1.5  -2e-3
//   duration  digits + unit s|m|h|d                                       30m  1h
//   date      YYYY-MM-DD[THH:MM:SS[.f][Z]]                                2026-11-01
//   guid      {8-4-4-4-12 hex digits}                                     {550e8400-…}
//   op        == != > >= < <=
//   lparen rparen comma, invalid (anything else, one character), end
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"

namespace eventd::query {

enum class TokenKind { word, string, integer, floating, duration, date, guid, op, lparen, rparen, comma, invalid, end };

struct Token {
    TokenKind kind = TokenKind::end;
    std::string text;     // exactly as written in the query (quotes and braces included)
    std::string value;    // string: the unescaped contents; guid: the text inside the braces
    size_t position = 0;  // 1-based character (not byte) position of the first character
};

// The whole query as tokens, always ending with one `end` token (position = length + 1).
// Errors (EINVAL, "parse error at position P: expected X, found Y") only for text that no
// reading could make sense of: an unterminated string, an unknown escape, a malformed {GUID}.
base::Result<std::vector<Token>> tokenize(std::string_view text);

// Case-insensitive (ASCII) comparison of a word token with a keyword written in uppercase.
bool is_keyword(const Token& token, std::string_view keyword);

// How an error message names a token: 'text' in single quotes, or "end of query".
std::string describe(const Token& token);

// EINVAL "parse error at position P: expected X, found Y" (PSD-008 §8.6.1: parse errors say
// where and what was expected).
base::Error parse_error(size_t position, std::string_view expected, std::string_view found);
base::Error parse_error(const Token& found, std::string_view expected);

}  // namespace eventd::query
