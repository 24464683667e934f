// Sigma rules compiled and matched against audit events shaped as eventd stores them
// (docs/AUDIT.md): every construct the compiler supports, each with an event that matches and
// a look-alike that does not; and the refusals, each with its reason.
#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "detection/condition.hpp"
#include "detection/sigma_rule.hpp"
#include "detection/value_pattern.hpp"
#include "base/base64url.hpp"

using namespace eventd::detection;
using nlohmann::json;

namespace {

// A rule around `detection` (YAML, indented by four spaces under `detection:`).
std::string rule_yaml(const std::string& detection, const std::string& extra = "") {
    return "title: Test rule\n"
           "id: 6b3c54a4-1f0e-4a8b-9d0c-0123456789ab\n"
           "status: test\n"
           "level: high\n"
           "tags:\n  - attack.execution\n  - attack.t1059\n"
           "logsource:\n  product: linux\n  service: auditd\n" +
           extra + "detection:\n" + detection;
}

SigmaRule compiled(const std::string& detection) {
    auto rule = SigmaRule::compile(rule_yaml(detection));
    INFO((rule.ok() ? std::string() : rule.error().message));
    REQUIRE(rule.ok());
    return std::move(*rule);
}

std::string refusal(const std::string& yaml) {
    auto rule = SigmaRule::compile(yaml);
    REQUIRE_FALSE(rule.ok());
    return rule.error().message;
}

// An execve event as the audit source assembles it (AUDIT.md's example).
json exec_event(std::vector<std::string> argv, std::string exe = "/usr/bin/true") {
    return json{
        {"serial", 812},
        {"syscall", "execve"},
        {"syscall_nr", 59},
        {"success", "yes"},
        {"uid", 0},
        {"uid_name", "root"},
        {"auid", 1000},
        {"auid_name", "alice"},
        {"comm", "true"},
        {"exe", exe},
        {"key", "exec"},
        {"a0", "55d0c6a1b2c0"},
        {"argc", argv.size()},
        {"argv", argv},
        {"cwd", "/home/alice"},
        {"paths", json::array({{{"item", 0}, {"name", exe}, {"nametype", "NORMAL"}},
                               {{"item", 1}, {"name", "/lib64/ld-linux-x86-64.so.2"}, {"nametype", "NORMAL"}}})},
        {"record_types", {"SYSCALL", "EXECVE", "CWD", "PATH", "PATH", "PROCTITLE"}}};
}

}  // namespace

TEST_CASE("values: wildcards, escapes, anchors and case", "[detection][pattern]") {
    using A = ValuePattern::Anchor;
    CHECK(ValuePattern::glob("wget", A::whole, false).matches("WGET"));
    CHECK_FALSE(ValuePattern::glob("wget", A::whole, false).matches("wget2"));
    CHECK(ValuePattern::glob("wget", A::whole, true).matches("wget"));
    CHECK_FALSE(ValuePattern::glob("wget", A::whole, true).matches("Wget"));
    CHECK(ValuePattern::glob("/tmp/*", A::whole, false).matches("/tmp/x/y"));
    CHECK(ValuePattern::glob("a?c", A::whole, false).matches("abc"));
    CHECK_FALSE(ValuePattern::glob("a?c", A::whole, false).matches("ac"));
    CHECK(ValuePattern::glob("a\\*c", A::whole, false).matches("a*c"));
    CHECK_FALSE(ValuePattern::glob("a\\*c", A::whole, false).matches("abc"));
    CHECK(ValuePattern::glob("C:\\Windows", A::whole, false).matches("c:\\windows"));  // \W is itself
    CHECK(ValuePattern::glob("base64", A::contains, false).matches("echo x | base64 -d"));
    CHECK(ValuePattern::glob("/etc/", A::starts_with, false).matches("/etc/shadow"));
    CHECK_FALSE(ValuePattern::glob("/etc/", A::starts_with, false).matches("/tmp/etc/"));
    CHECK(ValuePattern::glob("shadow", A::ends_with, false).matches("/etc/shadow"));
    CHECK_FALSE(ValuePattern::glob("shadow", A::ends_with, false).matches("/etc/shadow-"));
    CHECK(ValuePattern::literal("a*b", A::whole, true).matches("a*b"));
    CHECK_FALSE(ValuePattern::literal("a*b", A::whole, true).matches("aXb"));
    // No exponential backtracking: 40 stars against 100,000 characters that never match.
    std::string stars;
    for (int i = 0; i < 40; ++i) stars += "*a";
    CHECK_FALSE(ValuePattern::glob(stars + "b", A::whole, false).matches(std::string(100000, 'a')));
}

TEST_CASE("values: re is searched, case-sensitive unless i; RE2 refuses what it cannot run in linear time",
          "[detection][pattern]") {
    auto re = ValuePattern::regex("^/dev/tcp/[0-9.]+/[0-9]+$", "");
    REQUIRE(re.ok());
    CHECK(re->matches("/dev/tcp/10.0.0.1/4444"));
    CHECK_FALSE(re->matches("/dev/tcp/host/4444"));
    auto search = ValuePattern::regex("nc -e", "");
    REQUIRE(search.ok());
    CHECK(search->matches("/bin/nc -e /bin/sh"));
    CHECK_FALSE(search->matches("NC -E"));
    auto i = ValuePattern::regex("nc -e", "i");
    REQUIRE(i.ok());
    CHECK(i->matches("NC -E"));
    auto backref = ValuePattern::regex("(a)\\1", "");
    REQUIRE_FALSE(backref.ok());
    CHECK_THAT(backref.error().message, Catch::Contains("not an expression RE2 accepts"));
}

TEST_CASE("conditions: precedence, parentheses, quantifiers and them", "[detection][condition]") {
    const std::set<std::string> ids = {"selection_a", "selection_b", "filter", "_private"};
    auto parsed = parse_condition("selection_a and not filter or selection_b", ids);
    REQUIRE(parsed.ok());
    CHECK((*parsed)->kind == Condition::Kind::or_);  // (a and (not filter)) or b
    REQUIRE((*parsed)->operands.size() == 2);
    CHECK((*parsed)->operands[0]->kind == Condition::Kind::and_);
    auto quantified = parse_condition("1 of selection_* and not 1 of filter*", ids);
    REQUIRE(quantified.ok());
    CHECK((*quantified)->operands[0]->names == std::vector<std::string>{"selection_a", "selection_b"});
    auto them = parse_condition("all of them", ids);
    REQUIRE(them.ok());
    CHECK((*them)->names == std::vector<std::string>{"filter", "selection_a", "selection_b"});  // not _private
    CHECK(identifiers_of(**parsed) == std::set<std::string>{"filter", "selection_a", "selection_b"});

    auto missing = parse_condition("selection_c", ids);
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.error().message ==
          "condition: 'selection_c' is no search identifier of the detection at character 1");
    auto aggregation = parse_condition("selection_a | count() by host > 5", ids);
    REQUIRE_FALSE(aggregation.ok());
    CHECK(aggregation.error().code == base::ErrorCode::not_supported);
    CHECK_FALSE(parse_condition("(selection_a and filter", ids).ok());
    CHECK_FALSE(parse_condition("selection_a and", ids).ok());
    CHECK_FALSE(parse_condition("2 of selection_*", ids).ok());
    CHECK_FALSE(parse_condition("1 of nothing_*", ids).ok());
}

TEST_CASE("a rule: execve arguments by position, record types, value lists and a filter", "[detection][sigma]") {
    const SigmaRule rule = compiled(R"(    selection:
        type: EXECVE
        a0|endswith:
            - /wget
            - /curl
        a1|contains: 'http'
    filter:
        auid: unset
    condition: selection and not filter
)");
    CHECK(rule.info().id == "6b3c54a4-1f0e-4a8b-9d0c-0123456789ab");
    CHECK(rule.info().level == "high");
    CHECK(rule.info().tags == std::vector<std::string>{"attack.execution", "attack.t1059"});
    CHECK(rule.fields() == std::vector<std::string>{"a0", "a1", "auid", "type"});
    CHECK(rule.matches(exec_event({"/usr/bin/wget", "http://x/y"})));
    CHECK(rule.matches(exec_event({"/usr/bin/CURL", "HTTPS://x"})));  // case-insensitive
    CHECK_FALSE(rule.matches(exec_event({"/usr/bin/wget", "ftp://x"})));
    CHECK_FALSE(rule.matches(exec_event({"/usr/bin/wget2", "http://x"})));
    CHECK_FALSE(rule.matches(exec_event({"/usr/bin/wget"})));  // no a1
    json no_execve = exec_event({"/usr/bin/wget", "http://x"});
    no_execve["record_types"] = {"SYSCALL", "CWD", "PATH"};
    CHECK_FALSE(rule.matches(no_execve));
    json unset = exec_event({"/usr/bin/wget", "http://x"});
    unset["auid"] = 4294967295u;
    unset.erase("auid_name");          // the unset id has no name in eventd's events
    CHECK_FALSE(rule.matches(unset));  // the filter: auditd's interpretation of it
}

TEST_CASE("a rule: PATH fields of any path, SYSCALL fields, list of maps, keywords, exists, null, cased, re",
          "[detection][sigma]") {
    SECTION("name and nametype of any PATH record") {
        const SigmaRule rule = compiled(R"(    selection:
        type: PATH
        name|startswith: /lib64/ld-linux
        nametype: NORMAL
    condition: selection
)");
        CHECK(rule.matches(exec_event({"/bin/true"})));
        json other = exec_event({"/bin/true"});
        other["paths"][1]["name"] = "/usr/lib/x";
        CHECK_FALSE(rule.matches(other));
    }
    SECTION("a0 of a SYSCALL-only selection is the SYSCALL record's, not argv") {
        const SigmaRule rule = compiled(R"(    selection:
        type: SYSCALL
        syscall: execve
        a0: 55d0c6a1b2c0
    condition: selection
)");
        CHECK(rule.matches(exec_event({"/bin/true"})));
        const SigmaRule by_number = compiled("    selection:\n        syscall: 59\n    condition: selection\n");
        CHECK(by_number.matches(exec_event({"/bin/true"})));
    }
    SECTION("a list of maps is any of them") {
        const SigmaRule rule = compiled(R"(    selection:
        - exe|endswith: /nc
        - comm: ncat
    condition: selection
)");
        CHECK(rule.matches(exec_event({"nc"}, "/usr/bin/nc")));
        json ncat = exec_event({"ncat"}, "/usr/bin/ncat.openbsd");
        ncat["comm"] = "ncat";
        CHECK(rule.matches(ncat));
        CHECK_FALSE(rule.matches(exec_event({"true"})));
    }
    SECTION("keywords: any string of the event, nested ones too") {
        const SigmaRule rule =
            compiled("    keywords:\n        - 'ld-linux'\n        - 'nothing-like-it'\n    condition: keywords\n");
        CHECK(rule.matches(exec_event({"/bin/true"})));
        json no = exec_event({"/bin/true"});
        no["paths"] = json::array();
        CHECK_FALSE(rule.matches(no));
    }
    SECTION("exists, null, cased, all, re") {
        const SigmaRule rule = compiled(R"(    selection:
        key|exists: true
        argv_truncated: null
        comm|cased: 'true'
        a1|contains|all:
            - '-e'
            - '/bin/sh'
        proctitle|re: '^x'
    condition: selection
)");
        json e = exec_event({"/usr/bin/nc", "-e /bin/sh"});
        e["proctitle"] = "xyz";
        CHECK(rule.matches(e));
        json truncated = e;
        truncated["argv_truncated"] = true;
        CHECK_FALSE(rule.matches(truncated));
        json upper = e;
        upper["comm"] = "TRUE";
        CHECK_FALSE(rule.matches(upper));
        json one_of_two = e;
        one_of_two["argv"][1] = "-e /bin/bash";
        CHECK_FALSE(rule.matches(one_of_two));
    }
    SECTION("base64offset finds a value inside a longer encoded text") {
        const SigmaRule rule =
            compiled("    selection:\n        a2|base64offset|contains: '/bin/sh'\n    condition: selection\n");
        // "echo 'x; /bin/sh -i'" encoded, at each of the three offsets the value can have.
        for (const std::string& prefix : {"", "a", "ab"}) {
            INFO("prefix '" << prefix << "'");
            const std::string plain = prefix + "/bin/sh -i";
            static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
            std::string encoded;
            uint32_t bits = 0;
            int held = 0;
            for (unsigned char c : plain) {
                bits = (bits << 8) | c;
                held += 8;
                while (held >= 6) encoded += kAlphabet[(bits >> (held -= 6)) & 63];
            }
            if (held) encoded += kAlphabet[(bits << (6 - held)) & 63];
            CHECK(rule.matches(exec_event({"bash", "-c", encoded})));
        }
        CHECK_FALSE(rule.matches(exec_event({"bash", "-c", "L2Jpbi9iYXNo"})));  // /bin/bash
    }
}

TEST_CASE("refusals: the whole rule, with the reason", "[detection][sigma]") {
    CHECK_THAT(refusal("title: x\nid: [unclosed\n"), Catch::StartsWith("not YAML: line"));
    CHECK(refusal(rule_yaml("    selection:\n        a0: x\n    condition: selection\n").replace(0, 6, "#itle:")) ==
          "no title");
    std::string no_id = rule_yaml("    selection:\n        a0: x\n    condition: selection\n");
    no_id.replace(no_id.find("id:"), 3, "xx:");
    CHECK(refusal(no_id) == "no id: every rule needs one (its alerts carry it)");
    CHECK(refusal(rule_yaml("    selection:\n        a0|wide: x\n    condition: selection\n")) ==
          "field 'a0': modifier 'wide' is not supported");
    CHECK_THAT(refusal(rule_yaml("    selection:\n        a0: x\n    condition: selection | count() > 3\n")),
               Catch::Contains("aggregations"));
    CHECK_THAT(refusal(rule_yaml("    selection:\n        a0: x\n    timeframe: 5m\n    condition: selection\n")),
               Catch::Contains("timeframe"));
    CHECK_THAT(refusal(rule_yaml("    selection:\n        a0: x\n    condition: other\n")),
               Catch::Contains("'other' is no search identifier"));
    CHECK_THAT(refusal(rule_yaml("    selection:\n        a0: x\n")), Catch::Contains("no condition"));
    std::string windows = rule_yaml("    selection:\n        Image: x\n    condition: selection\n");
    windows.replace(windows.find("service: auditd"), 15, "category: process_creation");
    CHECK_THAT(refusal(windows), Catch::Contains("product linux, service auditd"));
    CHECK_THAT(refusal(rule_yaml("    selection:\n        a0|re: '(a)\\1'\n    condition: selection\n")),
               Catch::Contains("field 'a0': re value"));
    CHECK_THAT(refusal(rule_yaml("    selection:\n        a0: x\n    condition: selection\n") + "---\ntitle: second\n"),
               Catch::Contains("rule collections"));
}

// What SigmaHQ's linux/auditd rules use that a naive engine gets wrong (docs/DETECTION.md,
// "Coverage"): keyword maps with an empty field, numeric keywords, SYSCALL, expansions under all.
TEST_CASE("the corners SigmaHQ's auditd rules use", "[detection][sigma]") {
    SECTION("'|all': keywords — every one somewhere in the event, beside field tests") {
        const SigmaRule rule = compiled(R"(    selection:
        type: EXECVE
        '|all':
            - 'ld-linux'
            - 'alice'
    condition: selection
)");
        CHECK(rule.matches(exec_event({"/bin/true"})));  // paths[1].name and cwd
        json no_alice = exec_event({"/bin/true"});
        no_alice["cwd"] = "/root";
        no_alice["auid_name"] = "bob";
        CHECK_FALSE(rule.matches(no_alice));
    }
    SECTION("numeric keywords are their decimal text; a keyword may span arguments (proctitle has them)") {
        const SigmaRule rule = compiled("    keywords:\n        - 812\n    condition: keywords\n");
        CHECK(rule.matches(exec_event({"/bin/true"})));  // the serial
        const SigmaRule spanning = compiled("    keywords:\n        - '--to-ports 42'\n    condition: keywords\n");
        json iptables = exec_event({"iptables", "--to-ports", "42"});
        CHECK_FALSE(spanning.matches(iptables));
        iptables["proctitle"] = "iptables --to-ports 42";
        CHECK(spanning.matches(iptables));
    }
    SECTION("SYSCALL is the syscall's name") {
        const SigmaRule rule = compiled("    selection:\n        SYSCALL: EXECVE\n    condition: selection\n");
        CHECK(rule.matches(exec_event({"/bin/true"})));
    }
    SECTION("base64offset: pySigma's encodings, one group per value under all") {
        // pySigma's test (tests/test_modifiers.py): "foobar" → Zm9vYmFy, Zvb2Jhc, mb29iYX.
        const SigmaRule rule = compiled(R"(    selection:
        a1|base64offset|contains|all:
            - foobar
            - barfoo
    condition: selection
)");
        CHECK(rule.matches(exec_event({"x", "Zvb2Jhc and YmFyZm9v"})));  // offset 1 of one, 0 of the other
        CHECK(rule.matches(exec_event({"x", "mb29iYX YmFyZm9v"})));
        CHECK_FALSE(rule.matches(exec_event({"x", "Zvb2Jhc only"})));  // all: both values
    }
    SECTION("windash: a flag's dash may be any of Windows' dashes, an inner one stays") {
        const SigmaRule rule = compiled("    selection:\n        a1|windash: '-param-1'\n    condition: selection\n");
        CHECK(rule.matches(exec_event({"x", "/param-1"})));
        CHECK(rule.matches(exec_event({"x", "\xe2\x80\x93param-1"})));
        CHECK_FALSE(rule.matches(exec_event({"x", "-param/1"})));
    }
    SECTION("an empty value list is a null check") {
        const SigmaRule rule = compiled("    selection:\n        argv_truncated: []\n    condition: selection\n");
        CHECK(rule.matches(exec_event({"x"})));
    }
}

TEST_CASE("base64 with the standard alphabet and padding (RFC 4648 §10's vectors)", "[detection][base64]") {
    auto enc = [](std::string s) { return base::base64_encode(std::vector<uint8_t>(s.begin(), s.end())); };
    CHECK(enc("") == "");
    CHECK(enc("f") == "Zg==");
    CHECK(enc("fo") == "Zm8=");
    CHECK(enc("foo") == "Zm9v");
    CHECK(enc("foob") == "Zm9vYg==");
    CHECK(enc("fooba") == "Zm9vYmE=");
    CHECK(enc("foobar") == "Zm9vYmFy");
    CHECK(base::base64_encode(std::vector<uint8_t>{0xfb, 0xff}) == "+/8=");
}
