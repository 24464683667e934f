// Issue 39 part 5: nothing raw reaches a terminal. The one escaper (base/display_escape.hpp),
// each class of dangerous text it must show escaped, and the views built on it: eventctl's
// pretty records and keys, its JSON lines (exact values, C1/bidi as \u), and kmes-tail's line.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "base/display_escape.hpp"
#include "eventctl/json_record.hpp"
#include "eventctl/pretty_format.hpp"

using nlohmann::json;

namespace {

std::string pretty_of(const json& record) {
    std::string out;
    const auto bytes = json::to_msgpack(record);
    REQUIRE(eventctl::append_pretty_record(out, bytes));
    return out;
}

std::string json_of(const json& record) {
    std::string out;
    const auto bytes = json::to_msgpack(record);
    REQUIRE(eventctl::append_json_record(out, bytes));
    return out;
}

}  // namespace

TEST_CASE("display escaper: every terminal-steering class is shown escaped, visibly", "[display]") {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"a\x1b]0;pwned\x07z", "a\\u001b]0;pwned\\u0007z"},       // OSC: sets the window title
        {"x\r\nforged line", "x\\r\\nforged line"},                // CR/LF: a forged line
        {"tab\there", "tab\\there"},
        {"del\x7f", "del\\u007f"},
        {"\xc2\x9b" "31mred", "\\u009b31mred"},                   // U+009B CSI, a C1 control
        {"\xc2\x85", "\\u0085"},                                   // U+0085 NEL
        {"evil\xe2\x80\xae" "exe.sh", "evil\\u202eexe.sh"},            // U+202E right-to-left override
        {"\xe2\x80\xaa\xe2\x80\xab\xe2\x80\xac\xe2\x80\xad", "\\u202a\\u202b\\u202c\\u202d"},
        {"\xe2\x81\xa6\xe2\x81\xa7\xe2\x81\xa8\xe2\x81\xa9", "\\u2066\\u2067\\u2068\\u2069"},  // isolates
        {"\xe2\x80\x8e\xe2\x80\x8f\xd8\x9c", "\\u200e\\u200f\\u061c"},                       // marks
        {"\xe2\x80\xa8\xe2\x80\xa9", "\\u2028\\u2029"},                                       // separators
        {"bad\xff", "bad\\xff"},                                   // not UTF-8
        {"\xc0\xaf", "\\xc0\\xaf"},                                // overlong
        {"\xed\xa0\x80", "\\xed\\xa0\\x80"},                       // a surrogate
        {"cut\xe2\x80", "cut\\xe2\\x80"},                          // truncated
        {"back\\slash", "back\\\\slash"},                          // so every escape is unambiguous
    };
    for (const auto& [raw, shown] : cases) {
        INFO(shown);
        CHECK(base::display_escaped(raw) == shown);
        CHECK(base::needs_display_escape(raw));
    }
    // A file really named with ESC and one named with the text "\033"/"\u001b" look different.
    CHECK(base::display_escaped("\x1b") != base::display_escaped("\\u001b"));
    // Printable UTF-8 is itself.
    for (const std::string ok : {"plain.type", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "\xc2\xa0nbsp"}) {
        CHECK(base::display_escaped(ok) == ok);
        CHECK_FALSE(base::needs_display_escape(ok));
    }
    CHECK(base::display_escaped("say \"hi\"", '"') == "say \\\"hi\\\"");
    CHECK(base::display_escaped("say \"hi\"") == "say \"hi\"");
}

TEST_CASE("pretty view: values and keys with C1, bidi or controls are escaped and keys quoted", "[display]") {
    const std::string line = pretty_of(json{{"exe", "/tmp/\xe2\x80\xaegnp.sh"},
                                            {"k\xc2\x9b" "2J", 1},
                                            {"event_type", "audit.x\x1b]0;t\x07"}});
    // (nlohmann's map sorts the keys)
    CHECK(line == "event_type=\"audit.x\\u001b]0;t\\u0007\" exe=\"/tmp/\\u202egnp.sh\" \"k\\u009b2J\"=1");
}

TEST_CASE("JSON lines: values stay exact, C1, DEL and bidi become \\u escapes", "[display]") {
    const std::string exe = "/tmp/\xe2\x80\xaegnp\xc2\x9b\x7f.sh";
    const std::string line = json_of(json{{"exe", exe}});
    CHECK(line == "{\"exe\":\"/tmp/\\u202egnp\\u009b\\u007f.sh\"}");
    CHECK(json::parse(line)["exe"] == exe);  // the same value for a JSON reader
    std::string text = json(exe).dump();
    base::escape_json_invisibles(text);
    CHECK(json::parse(text) == exe);
}
