// One Sigma value as a matcher of strings (Sigma specification, "Value modifiers" and
// "Wildcards"): a plain value is the whole string, `*` any run of characters and `?` one, `\`
// escaping either (and itself); `contains`, `startswith` and `endswith` add the `*`s; matching
// is case-insensitive (ASCII) unless the value is `cased`; a `re` value is an RE2 expression
// searched for anywhere in the string (sub-modifiers `i`, `m`, `s` as RE2's flags), case-sensitive
// unless `i`. RE2 runs in time linear in the string: no rule can make a match backtrack.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"

namespace re2 {
class RE2;
}

namespace eventd::detection {

class ValuePattern {
public:
    enum class Anchor { whole, contains, starts_with, ends_with };

    // A Sigma string value with its wildcards.
    static ValuePattern glob(std::string_view value, Anchor anchor, bool cased);
    // A literal: no wildcards (values produced by base64, say).
    static ValuePattern literal(std::string_view value, Anchor anchor, bool cased);
    // A `re` value; `flags` any of "i", "m", "s". Errors: RE2 refuses the expression (its reason).
    static base::Result<ValuePattern> regex(std::string_view expression, std::string_view flags);

    bool matches(std::string_view text) const;
    // As the rule wrote it, for `eventctl rules check` and alerts' explanations.
    const std::string& source() const { return source_; }

private:
    // The glob, one token per character of the value: a character (lower-case unless cased),
    // `*` or `?`.
    struct Token {
        enum class Kind { character, any_run, any_char };
        Kind kind;
        char c = 0;
    };
    bool glob_matches(std::string_view text) const;

    std::string source_;
    std::vector<Token> tokens_;
    bool cased_ = false;
    std::shared_ptr<const re2::RE2> regex_;  // shared: patterns are copied into compiled rules
};

}  // namespace eventd::detection
