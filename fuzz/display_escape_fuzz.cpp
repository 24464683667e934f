// The display escaper (base/display_escape.hpp) over arbitrary bytes — an event type or value
// as an emitter or the kernel wrote it. Checked: nothing unsafe for a terminal leaves it
// (terminal_safe.hpp: valid UTF-8, no C0/DEL/C1, no bidirectional or line control), with or
// without a quote character, and the quote never appears unescaped; needs_display_escape says
// "no" only for text the escaper leaves as it is; escape_json_invisibles keeps a JSON string's
// value (it parses back to what nlohmann wrote) and leaves nothing invisible in it.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/display_escape.hpp"
#include "check.hpp"
#include "terminal_safe.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const std::string plain = base::display_escaped(text);
    if (const auto problem = eventd::fuzz::terminal_unsafe(plain)) FUZZ_FAIL(problem->c_str(), plain);
    const std::string quoted = base::display_escaped(text, '"');
    if (const auto problem = eventd::fuzz::terminal_unsafe(quoted)) FUZZ_FAIL(problem->c_str(), quoted);
    for (size_t i = 0; i < quoted.size(); ++i) {
        if (quoted[i] == '\\') {
            ++i;  // an escape: the next character is its letter
            continue;
        }
        FUZZ_CHECK_MSG(quoted[i] != '"', quoted);
    }
    FUZZ_CHECK(base::needs_display_escape(text) == (plain != text));

    std::string json = nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    const auto value = nlohmann::json::parse(json);
    base::escape_json_invisibles(json);
    if (const auto problem = eventd::fuzz::terminal_unsafe(json)) FUZZ_FAIL(problem->c_str(), json);
    FUZZ_CHECK_MSG(nlohmann::json::parse(json) == value, json);
    return 0;
}
