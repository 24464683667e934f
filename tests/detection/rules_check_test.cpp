// `eventctl rules check` (the real eventctl, $EVENTCTL) on the rule files in tests/detection/rules:
// per file ok or the reason it is refused, the summary, and the exit code.
#include <catch2/catch.hpp>

#include <string>

#include "support/eventctl_runner.hpp"

using namespace eventd::query_it;

namespace {

const std::string kRules = RULES_DIR;

RunResult check(const std::vector<std::string>& paths) {
    std::vector<std::string> argv = {eventctl_path(), "rules", "check"};
    argv.insert(argv.end(), paths.begin(), paths.end());
    return run_command(argv, std::chrono::seconds(30));
}

}  // namespace

TEST_CASE("eventctl rules check: ok per compiling rule, the reason per refused one, exit 1 if any is refused",
          "[detection]") {
    const RunResult all = check({kRules});
    INFO(all.out << all.err);
    CHECK(all.exit_code == 1);
    CHECK_THAT(all.out, Catch::Contains("ok           " + kRules +
                                        "/exec_downloader.yml  "
                                        "0d6b7a52-7a1c-4a57-9f43-4a1f3c2b1e01  medium  Downloader run with a URL"));
    CHECK_THAT(all.out, Catch::Contains("unsupported: " + kRules +
                                        "/unsupported_modifier.yml  field 'a0': modifier 'utf16le' is not supported"));
    CHECK_THAT(all.out, Catch::Contains("invalid:     " + kRules + "/malformed.yml  not YAML: line"));
    CHECK_THAT(all.out, Catch::Contains("invalid:     " + kRules + "/no_id.yml  no id: every rule needs one"));
    CHECK_THAT(all.out, Catch::EndsWith("4 rule file(s): 1 compile, 3 refused\n"));

    const RunResult one = check({kRules + "/exec_downloader.yml"});
    CHECK(one.exit_code == 0);
    CHECK_THAT(one.out, Catch::EndsWith("1 rule file(s): 1 compile, 0 refused\n"));

    const RunResult missing = check({kRules + "/nothing.yml"});
    CHECK(missing.exit_code == 2);
    CHECK_THAT(missing.err, Catch::Contains("no such file or directory"));
}
